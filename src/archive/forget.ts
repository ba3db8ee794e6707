/**
 * `archive forget` and a pipeline's `retention`: removes the snapshots a retention policy does
 * not keep. The caller holds the archive's lock, and each removal waits for a look at it: once
 * another run has taken it over, no snapshot more is removed. A snapshot is first renamed out of `snapshots/`
 * view (a dot name), then deleted, so a removal cut short never leaves half a snapshot that looks
 * whole; later snapshots lose nothing, since their files are links of their own. Folders still
 * being built (`.partial`) and snapshots whose snapshot.json cannot be read are never removed.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { applyRetention, type RetentionDecision, type RetentionPolicy } from './retention.js';
import { listSnapshots, parseSnapshotId, snapshotsDir } from './store.js';
import type { TargetLock } from '../util/target-lock.js';

export type { RetentionPolicy } from './retention.js';

const REMOVING = '.removing-';

export interface ForgetResult {
  /** Ids kept, newest first. */
  keep: string[];
  /** Ids removed (or, in a dry run, that would be), newest first. */
  remove: string[];
  /** Why each snapshot is kept or removed. */
  decision: RetentionDecision;
}

export interface ForgetOptions {
  /** Lists what would be removed and removes nothing. */
  dryRun?: boolean;
  /**
   * The archive's lock the caller holds: before each removal it must still be this run's, or the
   * forget ends with a `LockLostError` and removes no snapshot more (one set aside already is
   * deleted by the next forget).
   */
  lock?: TargetLock;
}

export async function forgetSnapshots(archiveDir: string, policy: RetentionPolicy, options: ForgetOptions = {}): Promise<ForgetResult> {
  const { snapshots } = await listSnapshots(archiveDir);
  const readable = snapshots.filter((s) => s.doc !== null);
  const decision = applyRetention(readable.map((s) => ({ id: s.id, time: parseSnapshotId(s.id)!.time, complete: s.doc!.complete })), policy);
  for (const s of snapshots) if (!s.doc) decision.keep.push({ id: s.id, reasons: [`not understood (${s.problem}); left as it is`] });
  if (!options.dryRun) {
    await options.lock?.assertHeld();
    await removeLeftovers(archiveDir);
    for (const { id } of decision.remove) {
      await options.lock?.assertHeld();
      const aside = join(snapshotsDir(archiveDir), `${REMOVING}${id}-${randomBytes(4).toString('hex')}`);
      await rename(join(snapshotsDir(archiveDir), id), aside);
      await rm(aside, { recursive: true, force: true });
    }
  }
  return { keep: decision.keep.map((k) => k.id), remove: decision.remove.map((r) => r.id), decision };
}

/** Snapshots an earlier forget had set aside but not finished deleting. */
async function removeLeftovers(archiveDir: string): Promise<void> {
  const names = await readdir(snapshotsDir(archiveDir)).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(REMOVING))) await rm(join(snapshotsDir(archiveDir), name), { recursive: true, force: true });
}
