/**
 * A run stopped while the service lists ends at once (DESIGN.md section 8): the stop cuts the
 * listing requests, as it cuts a wait for the limits. Before, it waited for their answers, and a
 * service slow to list (or a 429 to wait out, up to 40 minutes) held a SIGTERM for as long. The
 * real CLI as a child process, against listings held back far longer than a stopped run may take:
 * an export's and an archive run's listing of the files, and an import's listings for routing.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, runCli, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { resetStats, stats } from '../import/photo-helpers.js';
import { verifyExport } from '../../src/pipelines/verify.js';

const emu = useEmulator({ generate: { members: 20, photo_ratio: 1, attachments_per_member: [1, 1], attachment_bytes: [3000, 6000] }, maintenance: false });

/** How long the service holds each held request back. */
const HELD_MS = 10_000;

afterEach(async () => {
  await emu().control('DELETE', '/faults');
});

/** Requests the emulator counted since the last reset: it counts a request once its latency is over, a token at once. */
const counted = async (route: string): Promise<number> => (await stats(emu())).requests[route] ?? 0;

/** The run has its token: the emulator counts a token request at once. */
const tokenIssued = async (): Promise<boolean> => (await counted('POST /token')) > 0;

/**
 * Runs the CLI with the requests whose path holds `held` held back, and sends `signal` half a
 * second after `ready` (by default: once the run has its token, and so asks for what is held).
 * Answers the run and how long it took to end after the signal.
 */
async function stopWhileHeld(args: string[], held: string, signal: NodeJS.Signals, env: NodeJS.ProcessEnv = {}, ready = tokenIssued): Promise<{ run: CliRun; endedAfterMs: number }> {
  await resetStats(emu());
  await emu().control('POST', '/faults', { api: { path_contains: held, latency_ms: HELD_MS } });
  const child = spawnCli(args, env);
  const done = finished(child);
  let ended = false;
  void done.then(() => (ended = true));
  while (!ended && !(await ready())) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 500));
  expect(ended, 'the run ended before it was stopped').toBe(false);
  const sent = Date.now();
  child.kill(signal);
  const run = await done;
  return { run, endedAfterMs: Date.now() - sent };
}

describe('a run stopped while the service lists', () => {
  it('attachments export: SIGINT ends it at once with exit 130, nothing written; the rerun completes', async () => {
    const out = join(tempDir('wds-stop-listing-'), 'out');
    const { run, endedAfterMs } = await stopWhileHeld(['attachments', 'export', '--out', out, ...connectionArgs(emu())], '/file', 'SIGINT');
    expect(run.code, run.stderr).toBe(130);
    // The listing would have come after HELD_MS: the run did not wait for it.
    expect(endedAfterMs).toBeLessThan(HELD_MS / 2);
    expect(run.stdout).toContain('interrupted: 0 of ? done; run it again to continue (stopped by SIGINT)');
    expect(run.stdout).toContain(`stopped while the service listed: nothing written to ${out}`);
    expect(run.stdout).not.toMatch(/^\s*written to /m);
    expect(existsSync(join(out, 'attachments'))).toBe(false);
    expect(existsSync(join(out, 'manifest.jsonl'))).toBe(false);

    await emu().control('DELETE', '/faults');
    const rerun = await runCli(['attachments', 'export', '--out', out, ...connectionArgs(emu())]);
    expect(rerun.code, rerun.stderr).toBe(0);
    const verified = await verifyExport(out);
    expect(verified.problems).toEqual([]);
    expect(verified.ok).toBe(20);
  });

  it('attachments export: SIGINT while its token is issued ends it at once with exit 130', async () => {
    const out = join(tempDir('wds-stop-listing-'), 'out');
    // The run asks for its token once it holds the export's lock.
    const { run, endedAfterMs } = await stopWhileHeld(['attachments', 'export', '--out', out, ...connectionArgs(emu())], '/token', 'SIGINT', {}, async () => existsSync(join(out, '.wds-lock')));
    expect(run.code, run.stderr).toBe(130);
    expect(endedAfterMs).toBeLessThan(HELD_MS / 2);
    expect(run.stdout).toContain(`stopped while the service listed: nothing written to ${out}`);
  });

  it('archive run: SIGTERM ends it at once with exit 143, and the archive is as it was', async () => {
    const dir = tempDir('wds-stop-listing-');
    const file = join(dir, 'nightly.yaml');
    const archive = join(dir, 'archive');
    await writeFile(file, [
      'name: stop-listing', 'from: { service: attachments }', 'to: { archive: ./archive }',
      `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: "\${TEST_SECRET}" }`, '',
    ].join('\n'));
    const args = ['run', file];
    const env = { TEST_SECRET: SECRET };
    const first = await runCli(args, env);
    expect(first.code, first.stderr).toBe(0);
    const [snapshot] = await readdir(join(archive, 'snapshots'));

    const { run, endedAfterMs } = await stopWhileHeld(args, '/file', 'SIGTERM', env);
    expect(run.code, run.stderr).toBe(143);
    expect(endedAfterMs).toBeLessThan(HELD_MS / 2);
    // No new snapshot, not even a .partial, and latest unmoved.
    expect(await readdir(join(archive, 'snapshots'))).toEqual([snapshot]);
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(snapshot);
    expect((await verifyExport(join(archive, 'snapshots', snapshot!))).problems).toEqual([]);
  });

  it('photos import: SIGINT while the members are listed ends it at once with exit 130, nothing sent', async () => {
    const source = join(tempDir('wds-stop-listing-'), 'photos');
    const exported = await runCli(['photos', 'export', '--out', source, ...connectionArgs(emu())]);
    expect(exported.code, exported.stderr).toBe(0);

    const { run, endedAfterMs } = await stopWhileHeld(['photos', 'import', source, '--no-trim', ...connectionArgs(emu())], '/members', 'SIGINT');
    expect(run.code, run.stderr).toBe(130);
    expect(endedAfterMs).toBeLessThan(HELD_MS / 2);
    expect(run.stdout + run.stderr).toMatch(/interrupted: 0 of 20/);
    expect((await stats(emu())).update_requests).toBe(0);
  });

  it('attachments import: SIGTERM while the sheets\' layouts are read ends it at once with exit 143, nothing sent', async () => {
    const source = join(tempDir('wds-stop-listing-'), 'attachments');
    const exported = await runCli(['attachments', 'export', '--out', source, ...connectionArgs(emu())]);
    expect(exported.code, exported.stderr).toBe(0);

    const { run, endedAfterMs } = await stopWhileHeld(['attachments', 'import', source, ...connectionArgs(emu())], '/sheet_layouts', 'SIGTERM');
    expect(run.code, run.stderr).toBe(143);
    expect(endedAfterMs).toBeLessThan(HELD_MS / 2);
    expect(run.stdout + run.stderr).toMatch(/interrupted: 0 of 20/);
    expect((await stats(emu())).update_requests).toBe(0);
  });
});
