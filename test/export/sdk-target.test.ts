/**
 * The SDK's runExport holds its target as the CLI does (DESIGN.md section 8): a folder of other
 * files, or a file named .zip that is no zip, is refused unless `force: true`, and left as it was;
 * the target's lock is taken for the run, so a second run (in this process or in the CLI) is
 * refused naming the first, and the lock of a run killed with SIGKILL is taken over by the next.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { expectMatchesState, state, tempDir } from '../helpers/export.js';
import { CLI_BUILD, connectionArgs, finished, spawnCli } from '../helpers/cli-process.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { TargetLockedError } from '../../src/util/target-lock.js';

const emu = useEmulator({ generate: { members: 40, photo_ratio: 1, photo_bytes: [20_000, 30_000], attachments_per_member: [0, 0] } });
const api = useClient(emu);

/** Resolves once `file` exists (a run's lock) and, with `filled`, holds something; fails after `ms`. */
async function until(file: string, filled = false, ms = 20_000): Promise<void> {
  const there = (): boolean => existsSync(file) && (!filled || readFileSync(file).length > 0);
  for (const end = Date.now() + ms; !there(); await sleep(20)) {
    if (Date.now() > end) throw new Error(`${file} did not appear in ${ms} ms`);
  }
}

it('a folder of other files, or a .zip that is no zip, is refused unless force: true, and left as it was', async () => {
  const folder = join(tempDir(), 'mine');
  mkdirSync(folder);
  writeFileSync(join(folder, 'notes.txt'), 'kept');
  await expect(runExport({ client: api(), what: 'photos', out: folder })).rejects.toThrow(
    /mine holds notes\.txt, and no manifest\.jsonl: it is no export folder.*or pass force: true/,
  );
  expect(readdirSync(folder)).toEqual(['notes.txt']);

  const forced = await runExport({ client: api(), what: 'photos', out: folder, force: true });
  expect(forced.report.counts.ok).toBe(40);
  expect(readFileSync(join(folder, 'notes.txt'), 'utf8')).toBe('kept');
  expect(readdirSync(folder).sort()).toEqual(['manifest.jsonl', 'notes.txt', 'photos']);

  const notZip = join(tempDir(), 'photos.zip');
  writeFileSync(notZip, 'a letter, not a zip');
  await expect(runExport({ client: api(), what: 'photos', out: notZip })).rejects.toThrow(/photos\.zip is a file that is not a zip archive.*pass force: true/);
  expect(readFileSync(notZip, 'utf8')).toBe('a letter, not a zip');
  expect(existsSync(`${notZip}.lock`)).toBe(false);
  await runExport({ client: api(), what: 'photos', out: notZip, force: true });
  await expectMatchesState(notZip, await state(emu()), 'photos');
});

it('two runs into one zip: the second is refused naming the first, in this process and from the CLI', async () => {
  await emu().control('POST', '/faults', { storage: { latency_ms: 100 } });
  try {
    const zip = join(tempDir(), 'photos.zip');
    const first = runExport({ client: api(), what: 'photos', out: zip, concurrency: 2 });
    await until(`${zip}.lock`);
    const second = await runExport({ client: api(), what: 'photos', out: zip }).catch((error: unknown) => error);
    expect(second).toBeInstanceOf(TargetLockedError);
    expect((second as TargetLockedError).holder).toMatchObject({ pid: process.pid, command: expect.stringContaining('runExport (photos)') });
    expect((await first).report.counts.ok).toBe(40);
    expect(existsSync(`${zip}.lock`)).toBe(false);
    expect((await verifyExport(zip)).problems).toEqual([]);

    // The CLI holds the same lock: an SDK run beside it is refused, naming the CLI's process.
    const again = join(tempDir(), 'cli.zip');
    const cli = spawnCli(['photos', 'export', '--out', again, '--concurrency', '2', ...connectionArgs(emu())]);
    const cliRun = finished(cli);
    await until(`${again}.lock`);
    const refused = await runExport({ client: api(), what: 'photos', out: again }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TargetLockedError);
    expect((refused as TargetLockedError).holder?.pid).toBe(cli.pid);
    expect((await cliRun).code).toBe(0);
    expect((await verifyExport(again)).problems).toEqual([]);
  } finally {
    await emu().control('POST', '/faults', { storage: { latency_ms: 0 } });
  }
}, 60_000);

it('a run killed with SIGKILL leaves its lock; the next run takes it over and completes the folder', async () => {
  await emu().control('POST', '/faults', { storage: { latency_ms: 200 } });
  const folder = join(tempDir(), 'killed');
  try {
    // Another process of the SDK, as a user's script is: the built package, not this test's sources.
    const script = `
      import { WdsClient, runExport } from ${JSON.stringify(pathToFileURL(join(CLI_BUILD, 'index.js')).href)};
      const client = new WdsClient({ baseUrl: ${JSON.stringify(emu().url)}, consumerKey: ${JSON.stringify(KEY)}, consumerSecret: ${JSON.stringify(SECRET)}, stateFile: false });
      await runExport({ client, what: 'photos', out: ${JSON.stringify(folder)}, concurrency: 2 });
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_code, signal) => resolve(signal)));
    await until(join(folder, '.wds-lock'));
    // Some files in (a manifest line each), most not: killed mid-run.
    await until(join(folder, 'manifest.jsonl'), true);
    child.kill('SIGKILL');
    expect(await ended).toBe('SIGKILL');
    const left = JSON.parse(readFileSync(join(folder, '.wds-lock'), 'utf8')) as { pid: number };
    expect(left.pid).toBe(child.pid);

    const rerun = await runExport({ client: api(), what: 'photos', out: folder });
    expect(rerun.report.counts.skipped).toBeGreaterThan(0);
    expect(rerun.report.counts.ok + rerun.report.counts.skipped).toBe(40);
    expect(existsSync(join(folder, '.wds-lock'))).toBe(false);
    await expectMatchesState(folder, await state(emu()), 'photos');
  } finally {
    await emu().control('POST', '/faults', { storage: { latency_ms: 0 } });
  }
}, 60_000);
