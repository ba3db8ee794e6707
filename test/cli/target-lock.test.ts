/**
 * The lock's heartbeat and release (DESIGN.md section 8): a holder keeps its lock fresh while it
 * runs, so a long run is never taken for a stale one; and a holder whose lock was taken over
 * (it hung past the stale age) neither renews nor removes the new holder's lock.
 */
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/export.js';
import { STALE_AFTER_MS, TargetLockedError, acquireTargetLock } from '../../src/util/target-lock.js';

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

it('a holder whose lock was taken over leaves the new lock alone', async () => {
  const file = join(tempDir(), '.wds-lock');
  const first = await acquireTargetLock(file, { command: 'hung run', heartbeatMs: 250 });
  // The first hangs: its heartbeat stops (here: set back past the stale age just after a beat,
  // so that the next is 250 ms away), and a second run takes over.
  const old = new Date(Date.now() - STALE_AFTER_MS - 10_000);
  utimesSync(file, old, old);
  while (statSync(file).mtimeMs === old.getTime()) await sleep(5);
  utimesSync(file, old, old);
  const second = await acquireTargetLock(file, { command: 'new run' });
  expect(second.tookOver).toMatch(/had not renewed it for 1[23]\d s/);
  const held = readFileSync(file, 'utf8');
  await sleep(300);
  await first.release();
  expect(readFileSync(file, 'utf8')).toBe(held);
  expect(JSON.parse(held).command).toBe('new run');
  await second.release();
});
