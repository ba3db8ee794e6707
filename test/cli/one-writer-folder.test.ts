/**
 * One writer per folder, and the lock's life (DESIGN.md section 8), with real CLI children: two
 * exports into one folder (5 tries); `--wait-lock` waiting for a run, then succeeding, and giving
 * up past its duration; a SIGKILLed holder's lock taken over; locks with a dead pid, or another
 * host's with an old heartbeat, taken over, and a live pid's of this host or a fresh one from
 * another host respected; `verify` blind to a lock;
 * Ctrl-C while waiting, and runs stopped by signals, leaving no lock.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { connectionArgs, finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { acquireTargetLock } from '../../src/util/target-lock.js';
import { SLOW_STORAGE, TWO_WRITERS_COMPANY, TWO_WRITERS_MEMBERS, expectOneWriter, exportArgs, start, until } from './two-writers.js';

const emu = useEmulator({ generate: TWO_WRITERS_COMPANY });
beforeAll(async () => {
  await emu().control('POST', '/faults', SLOW_STORAGE);
});

async function expectComplete(out: string): Promise<void> {
  const check = await verifyExport(out);
  expect(check.problems).toEqual([]);
  expect(check.files).toBe(TWO_WRITERS_MEMBERS);
}

/** A lock file as another run would have left it. */
function writeLock(file: string, holder: { pid: number; host: string }, ageMs = 0): void {
  writeFileSync(file, `${JSON.stringify({ ...holder, command: 'wds-files photos export --out somewhere', started_at: new Date(Date.now() - ageMs).toISOString(), token: 'left-behind' })}\n`);
  const at = new Date(Date.now() - ageMs);
  utimesSync(file, at, at);
}

/** The pid of a process that has ended. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

it('two exports into one folder, 5 tries: one succeeds, the other refuses naming it, and the folder verifies', async () => {
  const tries = Array.from({ length: 5 }, (_, i) => join(tempDir(), `try-${i}`));
  await Promise.all(tries.map((dir) => expectOneWriter(emu(), dir, join(dir, '.wds-lock'))));
  for (const dir of tries) expect(readdirSync(dir).sort()).toEqual(['manifest.jsonl', 'photos']);
}, 60_000);

it('--wait-lock 60s waits for the run under way, then runs and succeeds', async () => {
  const out = join(tempDir(), 'waited');
  // Slower storage keeps the first run going for seconds: longer than the second CLI takes
  // to start on a loaded machine, so that it meets the lock held.
  await emu().control('POST', '/faults', { storage: { latency_ms: 300 } });
  const first = start(exportArgs(emu(), out));
  await until('the first run to take its lock', () => existsSync(join(out, '.wds-lock')));
  const second = start(exportArgs(emu(), out, '--wait-lock', '60s'));
  const [a, b] = await Promise.all([first.done, second.done]).finally(() => emu().control('POST', '/faults', SLOW_STORAGE));
  expect(a.code, a.stderr).toBe(0);
  expect(b.code, b.stderr).toBe(0);
  expect(b.stderr).toContain(`is being written by pid ${first.pid} on ${hostname()}: waiting for it, up to 60 s`);
  // The second found everything in place: it ran after the first had finished.
  expect(b.stdout).toContain(`photos export: 0 ok, ${TWO_WRITERS_MEMBERS} skipped`);
  await expectComplete(out);
  expect(existsSync(join(out, '.wds-lock'))).toBe(false);
}, 60_000);

it('--wait-lock past its duration refuses, naming the holder', async () => {
  const out = join(tempDir(), 'held');
  mkdirSync(out);
  // Held by this test process: alive, and its heartbeat fresh.
  const lock = await acquireTargetLock(join(out, '.wds-lock'), { command: 'the test holding the lock' });
  try {
    const started = Date.now();
    const run = await runCli(exportArgs(emu(), out, '--wait-lock', '1s'));
    expect(run.code, run.stderr).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(run.stderr).toContain(`is being written by another run: pid ${process.pid} on ${hostname()} (the test holding the lock)`);
    expect(run.stderr).toContain('Waited 1 s for it.');
    expect(readdirSync(out)).toEqual(['.wds-lock']);
  } finally {
    await lock.release();
  }
  expect(readdirSync(out)).toEqual([]);
}, 30_000);

it('a SIGKILLed holder leaves its lock, and the next run takes it over and completes', async () => {
  const out = join(tempDir(), 'killed');
  const holder = start(exportArgs(emu(), out));
  const lockFile = join(out, '.wds-lock');
  await until('downloads under way', () => existsSync(join(out, 'manifest.jsonl')) && readFileSync(join(out, 'manifest.jsonl'), 'utf8').length > 0);
  process.kill(holder.pid, 'SIGKILL');
  expect((await holder.done).signal).toBe('SIGKILL');
  expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(holder.pid);
  const rerun = await runCli(exportArgs(emu(), out));
  expect(rerun.code, rerun.stderr).toBe(0);
  expect(rerun.stderr).toContain(`took over the lock of an earlier run (pid ${holder.pid} on ${hostname()} had ended)`);
  await expectComplete(out);
  expect(existsSync(lockFile)).toBe(false);
}, 30_000);

it('a lock whose pid has ended, or another host\'s whose heartbeat is old, is taken over; a live one of this host, or a fresh one from another host, is not', async () => {
  const dir = tempDir();
  const deadZip = join(dir, 'dead.zip');
  const dead = deadPid();
  writeLock(`${deadZip}.lock`, { pid: dead, host: hostname() });
  const afterDead = await runCli(exportArgs(emu(), deadZip));
  expect(afterDead.code, afterDead.stderr).toBe(0);
  expect(afterDead.stderr).toContain(`took over the lock of an earlier run (pid ${dead} on ${hostname()} had ended)`);
  await expectComplete(deadZip);

  // Another host's run whose heartbeat stopped 3 minutes ago: a machine that went away.
  const oldZip = join(dir, 'old.zip');
  writeLock(`${oldZip}.lock`, { pid: 1, host: 'backup-host-2' }, 180_000);
  const afterOld = await runCli(exportArgs(emu(), oldZip));
  expect(afterOld.code, afterOld.stderr).toBe(0);
  expect(afterOld.stderr).toMatch(/took over the lock of an earlier run \(pid 1 on backup-host-2 had not renewed it for 18\d s\)/);
  await expectComplete(oldZip);
  expect(readdirSync(dir).sort()).toEqual(['dead.zip', 'old.zip']);

  // This test process is alive on this host, its "heartbeat" 3 minutes old: it may be stopped
  // (Ctrl-Z) and go on when continued, so its lock stays.
  const stopped = join(dir, 'stopped.zip');
  writeLock(`${stopped}.lock`, { pid: process.pid, host: hostname() }, 180_000);
  const refusedStopped = await runCli(exportArgs(emu(), stopped));
  expect(refusedStopped.code, refusedStopped.stderr).toBe(1);
  expect(refusedStopped.stderr).toContain(`is being written by another run: pid ${process.pid} on ${hostname()}`);
  expect(existsSync(stopped)).toBe(false);

  // Another host's pid cannot be checked from here, and its heartbeat is fresh: the run refuses.
  const elsewhere = join(dir, 'elsewhere.zip');
  writeLock(`${elsewhere}.lock`, { pid: 1, host: 'backup-host-2' });
  const refused = await runCli(exportArgs(emu(), elsewhere));
  expect(refused.code, refused.stderr).toBe(1);
  expect(refused.stderr).toContain('is being written by another run: pid 1 on backup-host-2 (wds-files photos export --out somewhere)');
  expect(existsSync(elsewhere)).toBe(false);
  expect(existsSync(`${elsewhere}.lock`)).toBe(true);
}, 30_000);

it('verify and an import of a folder an export is writing do not count its lock as a file', async () => {
  const out = join(tempDir(), 'verified');
  expect((await runCli(exportArgs(emu(), out))).code).toBe(0);
  const lock = await acquireTargetLock(join(out, '.wds-lock'), { command: 'another export' });
  try {
    const run = await runCli(['verify', out]);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain(`${TWO_WRITERS_MEMBERS} of ${TWO_WRITERS_MEMBERS} files match the manifest`);
    expect(run.stdout).not.toContain('.wds-lock');
    // Nor does an import of the folder.
    const report = join(tempDir(), 'import-report.json');
    const imported = await runCli(['photos', 'import', out, '--dry-run', '--report', report, ...connectionArgs(emu())]);
    expect(imported.code, imported.stderr).toBe(0);
    const items = JSON.parse(readFileSync(report, 'utf8')).items as Array<{ path?: string }>;
    expect(items).toHaveLength(TWO_WRITERS_MEMBERS);
    expect(items.filter((i) => i.path?.includes('.wds-lock'))).toEqual([]);
  } finally {
    await lock.release();
  }
}, 30_000);

it('Ctrl-C while waiting for the lock stops at once (exit 130), having sent nothing', async () => {
  const out = join(tempDir(), 'interrupted-wait');
  mkdirSync(out);
  const lock = await acquireTargetLock(join(out, '.wds-lock'), { command: 'the test holding the lock' });
  try {
    const before = (await emu().control('GET', '/stats')).tokens_issued as number;
    const child = spawnCli(exportArgs(emu(), out, '--wait-lock', '5m'));
    const done = finished(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await until('the run to wait', () => stderr.includes('waiting for it, up to 5 min'));
    child.kill('SIGINT');
    const run = await done;
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toContain(`stopped by SIGINT while waiting for ${out}; nothing was done`);
    expect((await emu().control('GET', '/stats')).tokens_issued).toBe(before);
    expect(readdirSync(out)).toEqual(['.wds-lock']);
  } finally {
    await lock.release();
  }
}, 30_000);

it('a run stopped by Ctrl-C removes its lock, and so does one stopped at once by a second signal', async () => {
  const graceful = join(tempDir(), 'stopped');
  const first = start(exportArgs(emu(), graceful));
  await until('downloads under way', () => existsSync(join(graceful, 'manifest.jsonl')) && readFileSync(join(graceful, 'manifest.jsonl'), 'utf8').length > 0);
  process.kill(first.pid, 'SIGINT');
  const stopped = await first.done;
  expect(stopped.code, stopped.stderr).toBe(130);
  expect(existsSync(join(graceful, '.wds-lock'))).toBe(false);

  // A second signal while the first is being handled: the process exits at once (process.exit),
  // and the lock goes with it. SIGINT and SIGTERM, sent together, are both delivered (two of one
  // kind may merge into one).
  const atOnce = join(tempDir(), 'stopped-at-once');
  const child = spawnCli(exportArgs(emu(), atOnce));
  const done = finished(child);
  const before = (await emu().control('GET', '/stats')).storage_downloads as number;
  while (((await emu().control('GET', '/stats')).storage_downloads as number) === before) await sleep(20);
  child.kill('SIGINT');
  child.kill('SIGTERM');
  const ended = await done;
  expect([130, 143], ended.stderr).toContain(ended.code);
  expect(ended.stderr).toMatch(/SIG(INT|TERM) again: stopping now/);
  expect(existsSync(join(atOnce, '.wds-lock'))).toBe(false);
}, 30_000);
