/**
 * The lock of a bucket archive (DESIGN.md sections 8 and 13): `locks/archive`, written with a
 * conditional write (If-None-Match: *), holding who writes as a folder's `.wds-lock` does, and
 * rewritten every 10 s as its heartbeat. Some servers honour the condition only in an unversioned
 * bucket, and an Object Lock bucket is versioned, so the writer reads the lock back after writing
 * it: of two runs that both wrote, the one whose holding the object does not show backs off. A
 * lock is stale by the folder lock's rules (holderGone), the heartbeat being the object's time.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  HEARTBEAT_MS, LockLostError, TargetLockedError, holderGone, processStart, type LockHolder, type TargetLock,
} from '../../util/target-lock.js';
import type { BucketStore } from './store.js';

export const LOCK_NAME = 'locks/archive';

/**
 * A holding read back this recently stands for a read now: the lock can pass to another run only
 * after 2 minutes without a heartbeat, so it is still ours. A run's end asks twice in a row (its
 * output settled, then its snapshot written), and a short run asks right after taking the lock.
 */
const CONFIRMED_FOR_MS = 1000;

async function readHolder(store: BucketStore): Promise<{ holder: LockHolder | null; heartbeatMs: number } | null> {
  const found = await store.bucket.getWithTime(LOCK_NAME);
  if (!found) return null;
  try {
    return { holder: JSON.parse(found.bytes.toString('utf8')) as LockHolder, heartbeatMs: found.modified.getTime() };
  } catch {
    return { holder: null, heartbeatMs: found.modified.getTime() };
  }
}

/**
 * Takes the archive's lock, or throws a TargetLockedError naming the run that holds it. `waitMs`
 * waits for it instead. A stale lock (its run ended, or silent for 2 minutes) is taken over.
 */
export async function lockBucketArchive(store: BucketStore, options: { command: string; waitMs?: number; onWait?: (holder: LockHolder | null) => void }): Promise<TargetLock> {
  const file = `${store.where}/${LOCK_NAME}`;
  const start = processStart(process.pid);
  const holder: LockHolder = {
    pid: process.pid, host: hostname(), command: options.command, started_at: new Date().toISOString(), token: randomBytes(8).toString('hex'),
    ...(start ? { proc_start: start } : {}),
  };
  const body = JSON.stringify(holder);
  const until = Date.now() + (options.waitMs ?? 0);
  let waited = false;
  let tookOver: string | null = null;
  let confirmedAt = 0;
  for (;;) {
    if (await store.bucket.put(LOCK_NAME, body, { ifAbsent: true, contentType: 'application/json' })) {
      const seen = await readHolder(store);
      if (seen?.holder?.token === holder.token) {
        confirmedAt = Date.now();
        break;
      }
      // Another run wrote after this one, where the condition was not atomic: it holds the lock.
      if (seen) throw new TargetLockedError(file, seen.holder, Date.now() - seen.heartbeatMs);
      continue;
    }
    const seen = await readHolder(store);
    if (!seen) continue;
    const gone = holderGone(seen.holder, seen.heartbeatMs);
    if (gone) {
      tookOver = gone;
      await store.bucket.delete(LOCK_NAME);
      continue;
    }
    if (Date.now() >= until) throw new TargetLockedError(file, seen.holder, Date.now() - seen.heartbeatMs);
    if (!waited) options.onWait?.(seen.holder);
    waited = true;
    await sleep(1000);
  }
  const controller = new AbortController();
  const onRelease: (() => void)[] = [];
  let released = false;
  const assertHeld = async (): Promise<void> => {
    controller.signal.throwIfAborted();
    if (Date.now() - confirmedAt < CONFIRMED_FOR_MS) return;
    const asked = Date.now();
    const seen = await readHolder(store);
    if (seen?.holder?.token !== holder.token) {
      const error = new LockLostError(file, seen?.holder ?? null);
      controller.abort(error);
      throw error;
    }
    confirmedAt = asked;
  };
  const heartbeat = setInterval(() => {
    void (async () => {
      try {
        await assertHeld();
        await store.bucket.put(LOCK_NAME, body, { contentType: 'application/json' });
      } catch {
        // A heartbeat that fails is tried again; a lock taken over has aborted the signal.
      }
    })();
  }, HEARTBEAT_MS);
  heartbeat.unref();
  return {
    file,
    holder,
    tookOver,
    signal: controller.signal,
    assertHeld,
    async release() {
      if (released) return;
      released = true;
      clearInterval(heartbeat);
      for (const step of onRelease) step();
      const seen = await readHolder(store).catch(() => null);
      if (seen?.holder?.token === holder.token) await store.bucket.delete(LOCK_NAME);
    },
    onRelease(step) {
      onRelease.push(step);
    },
  };
}
