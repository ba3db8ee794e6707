/**
 * The one way a run takes the lock of what it writes (DESIGN.md sections 8 and 12): the export's
 * `runExport`, the CLI's preflight and pipeline runs each name the target and how to tell the user,
 * and this says where its lock file is and opens an archive's window of writes with it.
 */
import { acquireTargetLock, lockFileOf, type AcquireOptions, type TargetLock } from '../util/target-lock.js';

/**
 * What a run locks: a folder (`FOLDER/.wds-lock`), a zip or another file (`NAME.lock` beside it),
 * or a snapshot archive (its `.wds-lock`, and its record of when its own commands wrote).
 */
export interface LockedPlace {
  kind: 'folder' | 'zip' | 'file' | 'archive';
  path: string;
}

/** The lock file of a place. */
export const lockFileOfPlace = (place: LockedPlace): string =>
  lockFileOf(place.path, place.kind === 'folder' || place.kind === 'archive' ? 'folder' : 'file');

/**
 * Takes the lock of `place` (refused with a `TargetLockedError` when another run holds it, or
 * waited for with `waitMs`). An archive's lock also starts its window of writes
 * (src/archive/writes.ts); a lock whose window cannot start is let go again.
 */
export async function lockTarget(place: LockedPlace, options: AcquireOptions): Promise<TargetLock> {
  const lock = await acquireTargetLock(lockFileOfPlace(place), options);
  if (place.kind !== 'archive') return lock;
  try {
    // Loaded only for an archive: a folder's or a zip's run does without it.
    await (await import('../archive/writes.js')).recordWrites(place.path, lock);
    return lock;
  } catch (error) {
    await lock.release();
    throw error;
  }
}
