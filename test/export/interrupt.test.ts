/**
 * SIGINT (and SIGTERM) of an export at random moments (DESIGN.md section 8): the real CLI as a
 * child process, against storage slowed down so that a run lasts long enough to be stopped. Each
 * stopped run exits 130 (143), writes its report and the summary line, and leaves no temporary
 * file: a folder whose manifest lists exactly the files on disk, or a zip `.partial` that reads as
 * a complete zip whose manifest lists exactly its entries. The rerun completes, verifies, and
 * asks storage only for the files that were missing.
 */
import { existsSync } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { expectMatchesState, expectedFiles, filesUnder, readFolderExport, readZipExport, state, tempDir, type ExportContents } from '../helpers/export.js';
import { connectionArgs, finished, runCli, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { verifyExport } from '../../src/pipelines/verify.js';

const emu = useEmulator({ generate: { members: 300, photo_bytes: [10_000, 20_000], attachments_per_member: [0, 0] } });
/** Moments spread over the run, random within their stretch: CI runs draw new ones each time. */
const MOMENTS = 6;
/** Downloads at once, and storage latency: some 270 photos then take about two seconds. */
const CONCURRENCY = 4;
const LATENCY_MS = 25;

let total = 0;
beforeAll(async () => {
  total = expectedFiles(await state(emu()), 'photos').size;
});
beforeEach(async () => {
  await emu().control('DELETE', '/faults');
});

const exportArgs = (out: string, report?: string): string[] =>
  ['photos', 'export', '--out', out, '--concurrency', String(CONCURRENCY), ...(report ? ['--report', report] : []), ...connectionArgs(emu())];

const storageDownloads = async (): Promise<number> => (await emu().control('GET', '/stats')).storage_downloads as number;

/** Whole lines only: the text ends with a newline and every line is JSON. */
function expectWholeLines(text: string): void {
  if (text === '') return;
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) expect(() => JSON.parse(line), line).not.toThrow();
}

/** The manifest lists exactly the files there, each with its size and sha256. */
function expectManifestIsFiles(contents: ExportContents): void {
  expect(contents.manifest.map((l) => l.path).sort()).toEqual([...contents.files.keys()].sort());
  for (const line of contents.manifest) {
    expect(contents.files.get(line.path), line.path).toEqual(expect.objectContaining({ size: line.size, sha256: line.sha256 }));
  }
}

/**
 * Starts an export with storage slowed down and sends `signal` once `ready()` says so; a run that
 * ended first is answered as it is (the caller then sees exit 0).
 */
async function stopWhen(args: string[], ready: () => Promise<boolean>, signal: NodeJS.Signals): Promise<CliRun> {
  await emu().control('POST', '/faults', { storage: { latency_ms: LATENCY_MS } });
  const child = spawnCli(args);
  const done = finished(child);
  let ended = false;
  void done.then(() => (ended = true));
  while (!ended && !(await ready())) await new Promise((r) => setTimeout(r, 10));
  if (!ended) child.kill(signal);
  const run = await done;
  await emu().control('DELETE', '/faults');
  return run;
}

/** What a stopped run printed and wrote: exit code, summary line, report. */
async function expectStopped(run: CliRun, signal: NodeJS.Signals, report: string, present: number): Promise<void> {
  expect(run.code, run.stderr).toBe(signal === 'SIGTERM' ? 143 : 130);
  expect(run.stdout).toContain(`interrupted: ${present} of ${total} done; run it again to continue (stopped by ${signal})`);
  const written = JSON.parse(await readFile(report, 'utf8')) as { interrupted: unknown; counts: Record<string, number>; items: { key: string; outcome: string; reason?: string }[] };
  expect(written.interrupted).toEqual({ signal, total, unreached: total - present });
  // Every listed file is reported once: those present ok, none failed, the rest skipped as not reached.
  expect(written.counts).toMatchObject({ ok: present, skipped: total - present, failed: 0 });
  expect(written.items).toHaveLength(total);
  expect(new Set(written.items.map((i) => i.key)).size).toBe(total);
  for (const item of written.items.filter((i) => i.outcome !== 'ok')) {
    expect(item.reason).toBe(`not downloaded: the run was stopped (${signal}) before it reached this file; run it again to fetch it`);
  }
  expect(run.stderr).not.toMatch(/closing file descriptor|Warning/);
}

/** The rerun completes, verifies, and downloads exactly the files that were missing. */
async function expectRerunCompletes(out: string, present: number): Promise<void> {
  const before = await storageDownloads();
  const rerun = await runCli(exportArgs(out));
  expect(rerun.code, rerun.stderr).toBe(0);
  expect(await storageDownloads() - before).toBe(total - present);
  // verify's own checks, in this process: the CLI's verify has tests of its own.
  const verified = await verifyExport(out);
  expect(verified.problems).toEqual([]);
  expect(verified.ok).toBe(total);
  await expectMatchesState(out, await state(emu()), 'photos');
}

/** Moments spread over the run, shuffled; the last one stops with SIGTERM. */
const moments = (): { fraction: number; signal: NodeJS.Signals }[] =>
  Array.from({ length: MOMENTS }, (_, i) => ({ fraction: 0.02 + (0.85 * (i + Math.random())) / MOMENTS, signal: i === MOMENTS - 1 ? 'SIGTERM' : 'SIGINT' }));

describe('a folder export stopped by a signal', () => {
  it(`leaves a manifest equal to the files, and the rerun fetches only the rest (${MOMENTS} moments)`, { timeout: 240_000 }, async () => {
    for (const { fraction, signal } of moments()) {
      const dir = tempDir();
      const out = join(dir, 'photos');
      const report = join(dir, 'report.json');
      const landed = Math.max(1, Math.floor(total * fraction));
      const manifestLines = async (): Promise<number> => (await readFile(join(out, 'manifest.jsonl'), 'utf8').catch(() => '')).split('\n').filter((l) => l.endsWith('}') && !l.startsWith('{"kind":"source"')).length;
      const run = await stopWhen(exportArgs(out, report), async () => (await manifestLines()) >= landed, signal);
      expect(run.code, run.stdout + run.stderr).toBe(signal === 'SIGTERM' ? 143 : 130);

      const text = await readFile(join(out, 'manifest.jsonl'), 'utf8');
      expectWholeLines(text);
      const contents = await readFolderExport(out);
      expectManifestIsFiles(contents);
      const present = contents.files.size;
      expect(present, `stopped after ${landed} files`).toBeGreaterThanOrEqual(landed);
      expect(present).toBeLessThan(total);
      await expectStopped(run, signal, report, present);
      expect((await filesUnder(out)).filter((p) => p.startsWith('.wds-tmp') || p.includes('.partial'))).toEqual([]);
      expect(existsSync(join(out, '.wds-tmp'))).toBe(false);

      await expectRerunCompletes(out, present);
    }
  });
});

describe('a zip export stopped by a signal', () => {
  it(`leaves a complete .partial whose manifest lists its entries, and the rerun keeps them (${MOMENTS} moments)`, { timeout: 240_000 }, async () => {
    const bytes = [...expectedFiles(await state(emu()), 'photos').values()].reduce((n, f) => n + f.size, 0);
    for (const { fraction, signal } of moments()) {
      const dir = tempDir();
      const out = join(dir, 'photos.zip');
      const report = join(dir, 'report.json');
      const written = async (): Promise<number> => stat(`${out}.partial`).then((s) => s.size, () => 0);
      const run = await stopWhen(exportArgs(out, report), async () => (await written()) >= bytes * fraction, signal);

      // Only the .partial is left beside the zip (and the report); no spool folder, no zip.
      expect((await readdir(dir)).filter((name) => !name.endsWith('.lock')).sort()).toEqual(['photos.zip.partial', 'report.json']);
      const contents = await readZipExport(`${out}.partial`);
      expect(contents.order.at(-1)).toBe('manifest.jsonl');
      expectManifestIsFiles(contents);
      const present = contents.files.size;
      expect(present).toBeGreaterThan(0);
      expect(present).toBeLessThan(total);
      for (const [path, entry] of contents.files) expect(entry.local?.crc32, path).toBe(entry.crc32);
      await expectStopped(run, signal, report, present);

      await expectRerunCompletes(out, present);
      expect((await readdir(dir)).filter((name) => !name.endsWith('.lock')).sort()).toEqual(['photos.zip', 'report.json']);
    }
  });
});
