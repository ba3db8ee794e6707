/**
 * A holder that is stopped, not gone (DESIGN.md section 8), with real CLI children and real
 * SIGSTOP/SIGCONT: on the same host its lock is never taken over for an old heartbeat, since it
 * goes on writing when continued; a live pid that another process reused is; and a run whose
 * lock was taken over all the same (from another host, or by hand) stops without completing its
 * zip and leaves what the other run wrote alone.
 */
import { existsSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { runCli } from '../helpers/cli-process.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { SLOW_STORAGE, TWO_WRITERS_COMPANY, TWO_WRITERS_MEMBERS, exportArgs, start, until } from './two-writers.js';

const emu = useEmulator({ generate: TWO_WRITERS_COMPANY });
beforeAll(async () => {
  await emu().control('POST', '/faults', SLOW_STORAGE);
});

/** Replaces a file by a rename, as a run that takes a lock over or starts a zip makes a new one. */
function replace(file: string, text: string): void {
  writeFileSync(`${file}.new`, text);
  renameSync(`${file}.new`, file);
}

/** Starts an export into `zip`, and stops it (SIGSTOP) once it holds the lock and writes the zip. */
async function startStopped(zip: string): Promise<ReturnType<typeof start>> {
  const run = start(exportArgs(emu(), zip));
  try {
    await until('the export to write its zip', () => existsSync(`${zip}.lock`) && existsSync(`${zip}.partial`));
  } finally {
    process.kill(run.pid, 'SIGSTOP');
  }
  return run;
}

it('a stopped holder whose heartbeat is 3 minutes old keeps its lock, and completes the zip when continued', async () => {
  const zip = join(tempDir(), 'race.zip');
  const first = await startStopped(zip);
  try {
    // As if it had been stopped for 3 minutes (Ctrl-Z, a machine that slept).
    const old = new Date(Date.now() - 180_000);
    utimesSync(`${zip}.lock`, old, old);
    const second = await runCli(exportArgs(emu(), zip));
    expect(second.code, second.stderr).toBe(1);
    expect(second.stderr).toContain(`is being written by another run: pid ${first.pid} on ${hostname()}`);
  } finally {
    process.kill(first.pid, 'SIGCONT');
  }
  const done = await first.done;
  expect(done.code, done.stderr).toBe(0);
  const check = await verifyExport(zip);
  expect(check.problems).toEqual([]);
  expect(check.files).toBe(TWO_WRITERS_MEMBERS);
  expect(existsSync(`${zip}.lock`)).toBe(false);
}, 60_000);

it('a live pid with another start time than the lock records is a reused pid: its lock is taken over', async () => {
  const zip = join(tempDir(), 'reused.zip');
  // This test process is alive, but it is not the process that took the lock (start time 1 tick after boot).
  writeFileSync(`${zip}.lock`, `${JSON.stringify({ pid: process.pid, host: hostname(), command: 'wds-files photos export --out reused.zip', started_at: new Date().toISOString(), token: 'earlier', proc_start: '1' })}\n`);
  const run = await runCli(exportArgs(emu(), zip));
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toContain(`took over the lock of an earlier run (pid ${process.pid} on ${hostname()} had ended (another process has its pid now))`);
  expect((await verifyExport(zip)).problems).toEqual([]);
}, 60_000);

it('a run whose lock was taken over while it was stopped exits 1 without renaming the other run\'s zip into place', async () => {
  const zip = join(tempDir(), 'taken.zip');
  const first = await startStopped(zip);
  // What a run on another host does when it takes the lock over: a new lock file, then a new
  // .partial of its own.
  const taker = `${JSON.stringify({ pid: 4242, host: 'backup-host-2', command: 'wds-files photos export --out taken.zip', started_at: new Date().toISOString(), token: 'taker' })}\n`;
  try {
    replace(`${zip}.lock`, taker);
    replace(`${zip}.partial`, 'the other run\'s zip, half written');
  } finally {
    process.kill(first.pid, 'SIGCONT');
  }
  const done = await first.done;
  expect(done.code, done.stderr).toBe(1);
  expect(done.stderr).toContain(`another run took over the lock ${zip}.lock (pid 4242 on backup-host-2`);
  expect(done.stderr).not.toMatch(/\n\s+at /);
  expect(existsSync(zip)).toBe(false);
  expect(readFileSync(`${zip}.partial`, 'utf8')).toBe('the other run\'s zip, half written');
  expect(readFileSync(`${zip}.lock`, 'utf8')).toBe(taker);
}, 60_000);
