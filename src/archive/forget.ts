/**
 * `archive forget` and a pipeline's `retention`: removes the snapshots a retention policy does
 * not keep. The caller holds the archive's lock, and each removal waits for a look at it: once
 * another run has taken it over, no snapshot more is removed. A snapshot is first renamed out of `snapshots/`
 * view (a dot name), then deleted, so a removal cut short never leaves half a snapshot that looks
 * whole; later snapshots lose nothing, since their files are links of their own. Folders still
 * being built (`.partial`), snapshots whose snapshot.json cannot be read and those of another
 * company than the archive's own source are never removed (nor counted), nor is a snapshot being
 * read (`archive restore`, readers.ts): it is kept, and the next forget removes it; nothing waits
 * for the reader.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { applyRetention, type RetentionDecision, type RetentionPolicy } from './retention.js';
import { archiveSource, compareSnapshotIds, isAccepted, listSnapshots, parseSnapshotId, snapshotsDir, type SnapshotEntry } from './store.js';
import { describeSource, sameSource, type ExportSource } from '../sinks/source.js';
import { markRemoving, readersOf, whoReads, type Mark } from './readers.js';
import type { TargetLock } from '../util/target-lock.js';
import { removeTree } from '../util/remove-tree.js';

export type { RetentionPolicy } from './retention.js';

const REMOVING = '.removing-';

export interface ForgetResult {
  /** Ids kept, newest first. */
  keep: string[];
  /** Ids removed (or, in a dry run, that would be), newest first. */
  remove: string[];
  /** Why each snapshot is kept or removed. */
  decision: RetentionDecision;
  /** Ids the policy would remove that were kept (or, in a dry run, would be) because they are being read. */
  busy: string[];
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
  /**
   * The archive's own source (a run's); default: the one the archive records (archiveSource).
   * Snapshots of another company are neither counted nor removed.
   */
  source?: ExportSource;
}

export async function forgetSnapshots(archiveDir: string, policy: RetentionPolicy, options: ForgetOptions = {}): Promise<ForgetResult> {
  const listed = await listSnapshots(archiveDir);
  const { snapshots } = listed;
  const own = options.source ?? await archiveSource(archiveDir, listed);
  // A snapshot made before sources were recorded counts as the archive's own.
  const foreign = (s: SnapshotEntry): boolean => !!own && !!s.doc?.source && !sameSource(s.doc.source, own);
  const readable = snapshots.filter((s) => s.doc !== null && !foreign(s));
  // A snapshot held back counts as an incomplete one: newer than the newest accepted, it stays.
  const decision = applyRetention(readable.map((s) => ({ id: s.id, time: parseSnapshotId(s.id)!.time, complete: isAccepted(s.doc), held: s.doc!.held !== undefined })), policy);
  for (const s of snapshots) if (!s.doc) decision.keep.push({ id: s.id, reasons: [`not understood (${s.problem}); left as it is`] });
  for (const s of snapshots.filter(foreign)) decision.keep.push({ id: s.id, reasons: [`of another company, ${describeSource(s.doc!.source!)}; not counted, left as it is`] });
  const busy = new Map<string, Mark[]>();
  if (options.dryRun) {
    for (const { id } of decision.remove) {
      const readers = await readersOf(archiveDir, id);
      if (readers.length > 0) busy.set(id, readers);
    }
  } else {
    await options.lock?.assertHeld();
    await removeLeftovers(archiveDir);
    for (const { id } of decision.remove) {
      await options.lock?.assertHeld();
      const { readers, mark } = await markRemoving(archiveDir, id);
      if (readers.length > 0) {
        busy.set(id, readers);
        continue;
      }
      const aside = join(snapshotsDir(archiveDir), `${REMOVING}${id}-${randomBytes(4).toString('hex')}`);
      try {
        await rename(join(snapshotsDir(archiveDir), id), aside);
      } finally {
        await mark?.release();
      }
      await removeTree(aside);
    }
  }
  for (const [id, readers] of busy) {
    decision.remove = decision.remove.filter((r) => r.id !== id);
    decision.keep.push({ id, reasons: [`being read (${readers.map(whoReads).join('; ')}); the next forget removes it`] });
  }
  if (busy.size > 0) decision.keep.sort((a, b) => compareSnapshotIds(b.id, a.id));
  return { keep: decision.keep.map((k) => k.id), remove: decision.remove.map((r) => r.id), decision, busy: [...busy.keys()] };
}

/** Snapshots an earlier forget had set aside but not finished deleting. */
async function removeLeftovers(archiveDir: string): Promise<void> {
  const names = await readdir(snapshotsDir(archiveDir)).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(REMOVING))) await removeTree(join(snapshotsDir(archiveDir), name));
}
