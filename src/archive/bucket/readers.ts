/**
 * Readers of a bucket archive's snapshot (`archive restore`) and its removal (`forget`, a run's
 * retention) keep out of each other's way as in a folder (../readers.ts): each makes an empty
 * object `readers/<id>/<mark>` first, named as a folder's mark is, rewritten every 10 s as its
 * heartbeat, and looks for the other side's after. A restore that finds a removal under way waits
 * for it, then reads the snapshot if it is still there; a removal that finds a reader keeps the
 * snapshot for the next forget. A mark is stale by the rules of the archive's lock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { HEARTBEAT_MS, holderGone } from '../../util/target-lock.js';
import { SNAPSHOT_FILE, SNAPSHOTS_DIR } from '../store.js';
import { SnapshotRemovedError, nameOf, parseName, whoReads, type HeldMark, type Mark, type MarkKind } from '../readers.js';
import type { BucketStore } from './store.js';

export const READERS_PREFIX = 'readers/';

/** Puts this process's mark on snapshot `id`; its heartbeat runs until it is released. */
async function makeMark(store: BucketStore, id: string, kind: MarkKind): Promise<HeldMark> {
  const name = `${READERS_PREFIX}${id}/${nameOf(id, kind)}`;
  await store.bucket.put(name, '');
  const heartbeat = setInterval(() => void store.bucket.put(name, '').catch(() => undefined), HEARTBEAT_MS);
  heartbeat.unref();
  let released = false;
  return {
    file: store.bucket.where(name),
    async release() {
      if (released) return;
      released = true;
      clearInterval(heartbeat);
      await store.bucket.delete(name).catch(() => undefined);
    },
  };
}

/** The live marks of `kind` on snapshot `id` but `own`; stale ones are deleted. */
async function liveMarks(store: BucketStore, id: string, kind: MarkKind, own?: HeldMark): Promise<Mark[]> {
  const live: Mark[] = [];
  for (const object of await store.bucket.list(`${READERS_PREFIX}${id}/`)) {
    const mark = parseName(object.name.slice(object.name.lastIndexOf('/') + 1));
    if (!mark || mark.id !== id || mark.kind !== kind || store.bucket.where(object.name) === own?.file) continue;
    if (holderGone(mark, object.modified.getTime())) await store.bucket.delete(object.name).catch(() => undefined);
    else live.push({ ...mark, since: object.modified.toISOString() });
  }
  return live;
}

/**
 * Marks snapshot `id` as read by this process for as long as it reads it; a removal under way is
 * waited for, up to `waitMs`, and a snapshot removed meanwhile is a SnapshotRemovedError.
 */
export async function markBucketReading(store: BucketStore, id: string, waitMs = 30_000): Promise<HeldMark> {
  const mark = await makeMark(store, id, 'read');
  try {
    const until = Date.now() + waitMs;
    for (;;) {
      const removing = await liveMarks(store, id, 'remove', mark);
      if (removing.length === 0) break;
      if (Date.now() >= until) throw new SnapshotRemovedError(`snapshot ${id} is being removed (${whoReads(removing[0]!)}, archive forget or a run's retention); nothing was restored`);
      await sleep(500);
    }
    if (!(await store.bucket.head(`${SNAPSHOTS_DIR}/${id}/${SNAPSHOT_FILE}`))) {
      throw new SnapshotRemovedError(`snapshot ${id} was removed (archive forget or a run's retention) as this restore started; nothing was restored`);
    }
    return mark;
  } catch (error) {
    await mark.release();
    throw error;
  }
}

/**
 * Announces the removal of snapshot `id`, then answers its readers: with any, the removal is
 * withdrawn (`mark` null) and the snapshot must stay; with none, it may go, and `mark` is released
 * once it is gone.
 */
export async function markBucketRemoving(store: BucketStore, id: string): Promise<{ readers: Mark[]; mark: HeldMark | null }> {
  const mark = await makeMark(store, id, 'remove');
  const readers = await liveMarks(store, id, 'read', mark);
  if (readers.length > 0) {
    await mark.release();
    return { readers, mark: null };
  }
  return { readers, mark };
}

/** The live readers of snapshot `id`, for a dry run. */
export const bucketReadersOf = (store: BucketStore, id: string): Promise<Mark[]> => liveMarks(store, id, 'read');
