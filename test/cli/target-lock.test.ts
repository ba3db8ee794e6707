/**
 * The lock's heartbeat and release (DESIGN.md section 8): a holder keeps its lock fresh while it
 * runs, so a long run is never taken for a stale one; a live holder on this host keeps its lock
 * however old its heartbeat; and a holder whose lock was taken over is told so (its signal, and
 * assertHeld) and neither renews nor removes the new holder's lock.
 */
import { spawn } from 'node:child_process';
import { readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/export.js';
import { LockLostError, STALE_AFTER_MS, TargetLockedError, acquireTargetLock } from '../../src/util/target-lock.js';

it('a holder renews its heartbeat, and a second taker is refused all along', async () => {
  const file = join(tempDir(), 'out.zip.lock');
  const lock = await acquireTargetLock(file, { command: 'long run', heartbeatMs: 100 });
  try {
    // As if the last heartbeat were almost stale: the next one brings it back to now.
    const old = new Date(Date.now() - STALE_AFTER_MS + 5_000);
    utimesSync(file, old, old);
    await sleep(400);
    expect(Date.now() - statSync(file).mtimeMs).toBeLessThan(2_000);
    const refused = await acquireTargetLock(file, { command: 'second' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TargetLockedError);
    expect((refused as TargetLockedError).holder?.command).toBe('long run');
  } finally {
    await lock.release();
  }
});

it('a holder whose lock was taken over is told so, and leaves the new lock alone', async () => {
  const file = join(tempDir(), '.wds-lock');
  const first = await acquireTargetLock(file, { command: 'hung run', heartbeatMs: 100 });
  // A run on another host takes it over, as breakStale does: the old file goes, a new one is made.
  const taker = `${JSON.stringify({ pid: 4242, host: 'backup-host-2', command: 'new run', started_at: new Date().toISOString(), token: 'taker' })}\n`;
  writeFileSync(`${file}.new`, taker);
  renameSync(`${file}.new`, file);
  // The next heartbeat (every 100 ms) finds it; a loaded machine may make it late.
  for (const end = Date.now() + 5_000; !first.signal.aborted && Date.now() < end;) await sleep(20);
  expect(first.signal.aborted).toBe(true);
  expect(first.signal.reason).toBeInstanceOf(LockLostError);
  await expect(first.assertHeld()).rejects.toThrow('another run took over the lock');
  await first.release();
  expect(readFileSync(file, 'utf8')).toBe(taker);
});

it('a live holder on this host keeps its lock however old its heartbeat, and finds it still held', async () => {
  const file = join(tempDir(), 'out.zip.lock');
  // Held by another live process of this host: this test's own parent would do, but a child is surely another pid.
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
  try {
    writeFileSync(file, `${JSON.stringify({ pid: child.pid, host: hostname(), command: 'stopped run', started_at: new Date().toISOString(), token: 'stopped' })}\n`);
    const old = new Date(Date.now() - STALE_AFTER_MS - 60_000);
    utimesSync(file, old, old);
    const refused = await acquireTargetLock(file, { command: 'second' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TargetLockedError);
  } finally {
    child.kill('SIGKILL');
  }
  const own = await acquireTargetLock(join(tempDir(), '.wds-lock'), { command: 'run' });
  await expect(own.assertHeld()).resolves.toBeUndefined();
  expect(own.signal.aborted).toBe(false);
  await own.release();
});
