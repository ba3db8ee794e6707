/**
 * A run killed with SIGKILL halfway and started again (issue 4; DESIGN.md section 4): the CLI runs
 * as a child process against the emulator of this test, with storage bandwidth throttled, and is
 * killed once about half the files are in the manifest. The second run completes, leaves no
 * temporary file, and asks storage only for the files that were missing; a third run over the
 * complete folder asks storage for nothing. A killed zip export is written again from the start
 * and leaves no `.partial` behind. A manifest line the kill cut in half is dropped, so the next
 * run's lines are not glued to it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { expectMatchesState, expectedFiles, filesUnder, sha256, state, tempDir, type EmulatorState } from '../helpers/export.js';
import { connectionArgs, finished, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.js';
import { clientFor } from '../helpers/client.js';
import { runExport } from '../../src/pipelines/export.js';

const emu = useEmulator({
  generate: { members: 40, photo_bytes: [10_000, 14_000], attachments_per_member: [1, 1], attachment_bytes: [10_000, 14_000] },
});
/** Real seconds a throttled run would take whole; it is killed about halfway. */
const THROTTLED_SECONDS = 4;
const CONCURRENCY = 2;

let proxy: RecordingProxy;
let truth: EmulatorState;
beforeAll(async () => {
  // The CLI talks to the emulator through a recording proxy: the download URLs then point at the
  // proxy too, and every storage request shows which file it asked for.
  proxy = await startRecordingProxy(emu().url);
  truth = await state(emu());
});
afterAll(async () => {
  await proxy?.close();
});
beforeEach(async () => {
  await emu().control('DELETE', '/faults');
});

const cliArgs = (what: 'photos' | 'attachments', out: string): string[] =>
  [what, 'export', '--out', out, '--concurrency', String(CONCURRENCY), '--json', '--quiet', ...connectionArgs({ ...emu(), url: proxy.url })];

async function throttle(what: 'photos' | 'attachments'): Promise<void> {
  const bytes = [...expectedFiles(truth, what).values()].reduce((n, f) => n + f.size, 0);
  await emu().control('POST', '/faults', { storage: { bandwidth_bytes_per_s: Math.floor(bytes / CONCURRENCY / THROTTLED_SECONDS) } });
}

/** Starts the CLI and kills it with SIGKILL as soon as `halfway()` says so. */
async function runAndKill(args: string[], halfway: () => Promise<boolean>): Promise<CliRun> {
  const child = spawnCli(args);
  const done = finished(child);
  let ended = false;
  void done.then(() => (ended = true));
  while (!ended) {
    if (await halfway()) {
      child.kill('SIGKILL');
      break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return done;
}

async function runToEnd(args: string[]): Promise<{ run: CliRun; downloads: number; storagePaths: string[] }> {
  const before = (await emu().control('GET', '/stats')).storage_downloads as number;
  const from = proxy.requests.length;
  const run = await finished(spawnCli(args));
  const after = (await emu().control('GET', '/stats')).storage_downloads as number;
  const storagePaths = proxy.requests.slice(from).filter((r) => r.url.startsWith('/storage/')).map((r) => decodeURIComponent(new URL(r.url, 'http://x').pathname));
  return { run, downloads: after - before, storagePaths };
}

interface Line {
  code: string;
  path: string;
  size: number;
  sha256: string;
}

/** The readable lines of manifest text; a line cut by a kill is not a file of the manifest. */
const parseLines = (text: string): Line[] =>
  text.split('\n').flatMap((l) => {
    try {
      const line = JSON.parse(l) as Line & { kind?: string };
      // The source line leads the manifest: it names no file.
      return line.kind === 'source' ? [] : [line];
    } catch {
      return [];
    }
  });

const manifestLines = async (dir: string): Promise<Line[]> => parseLines(await readFile(join(dir, 'manifest.jsonl'), 'utf8').catch(() => ''));

describe('a folder export killed halfway', () => {
  it('completes when started again, without temporary files, downloading only what was missing', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos');
    const total = expectedFiles(truth, 'photos').size;
    await throttle('photos');
    const killed = await runAndKill(cliArgs('photos', out), async () => (await manifestLines(out)).length >= total / 2);
    expect(killed.signal, killed.stderr).toBe('SIGKILL');

    // What the killed run left: part of the files, each whole, and its temporary folder.
    const landed = await manifestLines(out);
    expect(landed.length).toBeGreaterThanOrEqual(total / 2);
    expect(landed.length).toBeLessThan(total);
    for (const line of landed) {
      const data = await readFile(join(out, line.path));
      expect(sha256(data), line.path).toBe(line.sha256);
    }
    expect(existsSync(join(out, '.wds-tmp'))).toBe(true);

    await emu().control('DELETE', '/faults');
    const second = await runToEnd(cliArgs('photos', out));
    expect(second.run.code, second.run.stderr).toBe(0);
    const summary = JSON.parse(second.run.stdout) as { counts: Record<string, number> };
    expect(summary.counts).toMatchObject({ ok: total - landed.length, skipped: landed.length, failed: 0 });
    // Storage was asked once for each missing file, and never for a file already there.
    expect(second.downloads).toBe(total - landed.length);
    expect(second.storagePaths).toHaveLength(second.downloads);
    const present = new Set(landed.map((l) => `${l.code}.jpg`));
    for (const path of second.storagePaths) expect(present.has(path.slice(path.lastIndexOf('/') + 1)), path).toBe(false);

    await expectMatchesState(out, await state(emu()), 'photos');
    const leftovers = (await filesUnder(out)).filter((p) => p.includes('.wds-tmp') || p.endsWith('.partial'));
    expect(leftovers).toEqual([]);
    expect(existsSync(join(out, '.wds-tmp'))).toBe(false);

    // A run over the complete folder asks storage for nothing.
    const third = await runToEnd(cliArgs('photos', out));
    expect(third.run.code, third.run.stderr).toBe(0);
    expect(third.downloads).toBe(0);
    expect((JSON.parse(third.run.stdout) as { counts: Record<string, number> }).counts).toMatchObject({ ok: 0, skipped: total });
    await expectMatchesState(out, await state(emu()), 'photos');
  });
});

describe('a zip export killed halfway', () => {
  it('is written whole when started again, and no .partial is left', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const out = join(dir, 'attachments.zip');
    const bytes = [...expectedFiles(truth, 'attachments').values()].reduce((n, f) => n + f.size, 0);
    await throttle('attachments');
    const killed = await runAndKill(cliArgs('attachments', out), async () => {
      const size = await stat(`${out}.partial`).then((s) => s.size, () => 0);
      return size >= bytes / 2;
    });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(await readdir(dir)).toContain('attachments.zip.partial');
    expect(existsSync(out)).toBe(false);

    await emu().control('DELETE', '/faults');
    const second = await runToEnd(cliArgs('attachments', out));
    expect(second.run.code, second.run.stderr).toBe(0);
    expect(await readdir(dir)).toEqual(['attachments.zip']);
    await expectMatchesState(out, await state(emu()), 'attachments');
  });
});

describe('a manifest line cut by a kill', () => {
  it('is dropped, and the lines of the next run are not glued to it', async () => {
    const out = join(tempDir(), 'photos');
    const client = clientFor(emu());
    try {
      await runExport({ client, what: 'photos', out, concurrency: 4 });
      // The kill came while the last line was being appended: half of it is on disk.
      const lines = (await readFile(join(out, 'manifest.jsonl'), 'utf8')).trimEnd().split('\n');
      const cut = JSON.parse(lines.at(-1)!) as { code: string };
      await writeFile(join(out, 'manifest.jsonl'), `${lines.slice(0, -1).join('\n')}\n${lines.at(-1)!.slice(0, 40)}`);

      let seenDuringRun: { code: string }[] | undefined;
      const result = await runExport({
        client, what: 'photos', out, concurrency: 1,
        // Read at once (the line is appended before progress is told; the final rewrite comes later).
        onProgress: (p) => {
          if (p.done === 1) seenDuringRun = parseLines(readFileSync(join(out, 'manifest.jsonl'), 'utf8'));
        },
      });
      // Only the file of the cut line was downloaded again, and its new line was readable at once:
      // a second kill at that point would not have lost it.
      // The lines are the source line and one per file; the cut one's file is downloaded again.
      expect(result.report.counts).toMatchObject({ ok: 1, skipped: lines.length - 2 });
      expect(seenDuringRun?.map((l) => l.code)).toContain(cut.code);
      await expectMatchesState(out, await state(emu()), 'photos');
    } finally {
      await client.close();
    }
  });
});
