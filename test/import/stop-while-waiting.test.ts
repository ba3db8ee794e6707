/**
 * Ctrl-C while an import's next request waits for the update limit (DESIGN.md section 8, issue
 * 14): the real CLI, a real SIGINT, and the emulator counting what arrives. Two photos, one to
 * register and one to replace: two requests, the second waiting a minute on the client's window. The waiting request is
 * never sent, the run ends at once with exit 130 and its report, and the journal knows that
 * request did not leave: the rerun sends it without first waiting for the listing to show it.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, spawnCli } from '../helpers/cli-process.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import { noisyJpeg, photoHashes, resetStats, sha256, stats, writeFiles } from './photo-helpers.js';

const emu = useEmulator({ seed: 'samples/company', maintenance: false });

/** A member without a photo and one with a photo: a request each. */
async function twoMembers(e: TestEmulator): Promise<{ without: string; withPhoto: string }> {
  const state = (await e.control('GET', '/state')) as EmulatorState;
  const codes = (has: boolean): string[] => state.members.filter((m) => (m.photo !== null) === has).map((m) => m.code).sort();
  return { without: codes(false)[0]!, withPhoto: codes(true)[0]! };
}

/** Resolves once `text` shows up on the child's stderr. */
function onStderr(child: ReturnType<typeof spawnCli>, pattern: RegExp): Promise<void> {
  let seen = '';
  return new Promise((resolve) => {
    child.stderr.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) resolve();
    });
  });
}

describe('photos import stopped while a request waits for the limit', () => {
  it('sends nothing after SIGINT, exits 130 at once, and the rerun sends what was left', async () => {
    const { without, withPhoto } = await twoMembers(emu());
    const files = { [`${without}.jpg`]: await noisyJpeg(40, 40, 1), [`${withPhoto}.jpg`]: await noisyJpeg(40, 40, 2) };
    const dir = await writeFiles(tempDir('wds-stop-wait-'), files);
    const before = await photoHashes(emu());
    await resetStats(emu());
    const report = join(tempDir('wds-stop-wait-report-'), 'report.json');
    // One update request a minute on the client's side: the second one waits for the first's slot.
    const env = { XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-stop-wait-state-')), WDS_CLIENT_LIMITS: 'update=1/1m' };
    const args = ['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())];

    const child = spawnCli(args, env);
    const run = finished(child);
    await onStderr(child, /waiting \d+\.\d s: 1 update requests per minute reached/);
    const sentBefore = (await stats(emu())).update_requests;
    expect(sentBefore).toBe(1);
    const signalled = Date.now();
    child.kill('SIGINT');
    const stopped = await run;

    expect(stopped.code, stopped.stderr).toBe(130);
    // It did not wait the minute out to send the request anyway.
    expect(Date.now() - signalled).toBeLessThan(30_000);
    expect(stopped.stdout + stopped.stderr).toMatch(/interrupted: 1 of 2/);
    const after = await stats(emu());
    expect(after.update_requests).toBe(sentBefore);
    expect(after.rate_limited).toBe(0);
    // The report has the photo of the one request sent (the run starts with the lighter of the
    // two), and the other member's photo is as it was.
    const written = JSON.parse(readFileSync(report, 'utf8')) as { interrupted?: { signal: string; unreached?: number }; items: { code: string; outcome: string; reason: string }[] };
    expect(written.interrupted).toEqual({ signal: 'SIGINT', total: 2, unreached: 1 });
    expect(written.items.map((i) => i.outcome)).toEqual(['ok', 'skipped']);
    const sent = written.items[0]!.code;
    const left = sent === without ? withPhoto : without;
    expect([without, withPhoto]).toContain(sent);
    // The photo that waited is named too, as not sent.
    expect(written.items[1]).toMatchObject({ code: left, reason: 'not sent: the run was stopped (SIGINT) before it reached this file; run it again to send it' });
    const held = await photoHashes(emu());
    expect(held.get(sent)).toBe(sha256(files[`${sent}.jpg`]!));
    expect(held.get(left)).toBe(before.get(left) ?? null);

    // The rerun, with the same journal and a fresh window: only the photo that was not sent goes.
    const rerun = await finished(spawnCli(['photos', 'import', dir, '--no-trim', '--json', ...connectionArgs(emu())], { XDG_STATE_HOME: env.XDG_STATE_HOME }));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect((await stats(emu())).update_requests).toBe(sentBefore + 1);
    expect((await photoHashes(emu())).get(left)).toBe(sha256(files[`${left}.jpg`]!));
    const summary = JSON.parse(rerun.stdout.trim()) as { counts: Record<string, number> };
    expect(summary.counts).toMatchObject({ ok: 1, skipped: 1 });
  }, 90_000);
});
