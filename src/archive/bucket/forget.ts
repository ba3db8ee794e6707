/**
 * `archive forget` of a bucket archive (DESIGN.md section 13): the snapshots the policy does not
 * keep are removed by the folder archive's rules (forget.ts), then the content objects no
 * remaining snapshot names, but only those older than `unusedOlderThanMs` (a run may be uploading
 * them, to name them in a snapshot it has not written yet). Under Object Lock nothing still locked
 * is deleted or even tried: a snapshot or object whose retain-until is ahead stays, and the result
 * says until when. The snapshots kept get the retain-until of their objects extended before it
 * lapses (once less than half of the lock's days is left), as kopia's maintenance does. A
 * snapshot a restore is reading (its mark under `readers/`, bucket/readers.ts) stays, with its
 * objects, for the next forget.
 */
import { applyRetention } from '../retention.js';
import { SNAPSHOT_FILE, SNAPSHOTS_DIR, compareSnapshotIds, isAccepted, parseSnapshotId, type SnapshotEntry } from '../store.js';
import type { ForgetResult, RetentionPolicy } from '../forget.js';
import { describeSource, sameSource, type ExportSource } from '../../sinks/source.js';
import type { TargetLock } from '../../util/target-lock.js';
import { retainUntil } from './s3.js';
import { dataName, type BucketStore } from './store.js';
import { whoReads, type HeldMark } from '../readers.js';
import { openSnapshotManifest } from '../archive-store.js';
import { ItemList } from '../../stages/report-spill.js';
import { SortedSpill } from '../../util/sorted-spill.js';
import { bucketReadersOf, markBucketRemoving } from './readers.js';
import type { ObjectLock } from './address.js';

/** How old an object no snapshot names must be before forget deletes it: a day, as a run of the archive takes far less. */
export const DEFAULT_UNUSED_AGE_MS = 86_400_000;

export interface BucketForgetResult extends ForgetResult {
  /** Snapshots the policy would remove that stay locked, with until when. */
  locked: { id: string; until: string }[];
  objects: {
    /** Content objects no kept snapshot names that were deleted (or, in a dry run, would be). */
    removed: number;
    /** Such objects left because they are younger than the safety margin. */
    young: number;
    /** Such objects left because Object Lock still holds them. */
    locked: number;
  };
  /** Objects whose retain-until was extended, and the snapshots whose objects they are. */
  extended: { objects: number; snapshots: string[] };
}

export interface BucketForgetOptions {
  dryRun?: boolean;
  lock?: TargetLock;
  source?: ExportSource;
  /** Default DEFAULT_UNUSED_AGE_MS. */
  unusedOlderThanMs?: number;
  now?: Date;
}

export async function forgetBucketSnapshots(store: BucketStore, policy: RetentionPolicy, options: BucketForgetOptions = {}): Promise<BucketForgetResult> {
  const now = options.now ?? new Date();
  const { snapshots, partial } = await store.listSnapshots();
  const latest = await store.readLatest();
  const own = options.source ?? snapshots.find((s) => s.id === latest)?.doc?.source ?? snapshots.findLast((s) => s.doc?.source)?.doc?.source ?? null;
  const foreign = (s: SnapshotEntry): boolean => !!own && !!s.doc?.source && !sameSource(s.doc.source, own);
  const readable = snapshots.filter((s) => s.doc !== null && !foreign(s));
  const decision = applyRetention(readable.map((s) => ({ id: s.id, time: parseSnapshotId(s.id)!.time, complete: isAccepted(s.doc), held: s.doc!.held !== undefined })), policy);
  for (const s of snapshots) if (!s.doc) decision.keep.push({ id: s.id, reasons: [`not understood (${s.problem}); left as it is`] });
  for (const s of snapshots.filter(foreign)) decision.keep.push({ id: s.id, reasons: [`of another company, ${describeSource(s.doc!.source!)}; not counted, left as it is`] });
  const locked: { id: string; until: string }[] = [];
  for (const { id } of [...decision.remove]) {
    const until = store.lockedUntil.get(id);
    if (until && until > now) {
      locked.push({ id, until: until.toISOString() });
      decision.remove = decision.remove.filter((r) => r.id !== id);
      decision.keep.push({ id, reasons: [`locked until ${until.toISOString()} (Object Lock); a forget after that removes it`] });
    }
  }
  // A snapshot a restore reads stays, and so do its objects; the next forget removes it.
  const busy: string[] = [];
  const marks = new Map<string, HeldMark>();
  for (const { id } of [...decision.remove]) {
    if (!options.dryRun) await options.lock?.assertHeld();
    const { readers, mark } = options.dryRun ? { readers: await bucketReadersOf(store, id), mark: null } : await markBucketRemoving(store, id);
    if (mark) marks.set(id, mark);
    if (readers.length === 0) continue;
    busy.push(id);
    decision.remove = decision.remove.filter((r) => r.id !== id);
    decision.keep.push({ id, reasons: [`being read (${readers.map(whoReads).join('; ')}); the next forget removes it`] });
  }
  try {
    return await forgetUnread(store, decision, { ...options, now, snapshots, partial, locked, busy, marks });
  } finally {
    for (const mark of marks.values()) await mark.release();
  }
}

interface Decided extends BucketForgetOptions {
  now: Date;
  snapshots: SnapshotEntry[];
  partial: string[];
  locked: { id: string; until: string }[];
  busy: string[];
  /** The removal marks this forget holds, by snapshot: each released once its snapshot is gone. */
  marks: Map<string, HeldMark>;
}

/** Objects and lines sorted in memory at a time (as bucket/check.ts sorts them, beside the S3 client). */
const SORTED_A_RUN = 2048;

/** A content object of the listing (when it was written, ms), or a line of a staying snapshot naming one (due: its snapshot's retain-until is to be extended). */
type Named = { object: number } | { due: boolean };

/**
 * Removes the snapshots decided on, then the objects no remaining snapshot names. The objects
 * listed and the lines of the snapshots that stay are sorted by sha256 through temporary files
 * and merged, as `archive check` does (issue 46): an object with no line is unused. The objects to
 * delete and those whose retain-until is extended are kept on disk too, in sha256 order.
 */
async function forgetUnread(store: BucketStore, decision: BucketForgetResult['decision'], options: Decided): Promise<BucketForgetResult> {
  const { now, snapshots, partial, locked, busy } = options;
  decision.keep.sort((a, b) => compareSnapshotIds(b.id, a.id));
  const removing = new Set(decision.remove.map((r) => r.id));
  const result: BucketForgetResult = {
    keep: decision.keep.map((k) => k.id), remove: decision.remove.map((r) => r.id), decision, busy, locked,
    objects: { removed: 0, young: 0, locked: 0 }, extended: { objects: 0, snapshots: [] },
  };
  const staying = snapshots.filter((s) => !removing.has(s.id));
  const config = await store.readConfig();
  const due = config.lock && !options.dryRun ? dueForExtension(store, config.lock, staying.map((s) => s.id), now) : [];
  const deletable = new ItemList<string>().keepOnDisk();
  const extend = new ItemList<string>().keepOnDisk();
  try {
    let deletableCount = 0;
    let unused = 0;
    const margin = options.unusedOlderThanMs ?? DEFAULT_UNUSED_AGE_MS;
    for await (const { sha256, modified, named, byDue } of namedObjects(store, staying, partial, new Set(due))) {
      if (byDue) extend.push(sha256);
      if (named || modified === null) continue;
      unused += 1;
      if (now.getTime() - modified < margin) continue;
      // One HEAD an object, for those about to go only: the retain-until is on each object.
      if (config.lock) {
        const head = await store.bucket.head(dataName(sha256));
        if (head?.retainUntil && head.retainUntil > now) {
          result.objects.locked += 1;
          continue;
        }
      }
      deletable.push(dataName(sha256));
      deletableCount += 1;
    }
    result.objects.young = unused - deletableCount - result.objects.locked;
    if (options.dryRun) {
      result.objects.removed = deletableCount;
      return result;
    }
    await options.lock?.assertHeld();
    for (const { id } of decision.remove) {
      await options.lock?.assertHeld();
      const names = (await store.bucket.list(`${SNAPSHOTS_DIR}/${id}/`)).map((o) => o.name);
      // snapshot.json first: a removal cut short leaves an unfinished snapshot, never one that looks whole.
      await store.bucket.remove(names.filter((n) => n.endsWith(`/${SNAPSHOT_FILE}`)));
      await store.bucket.remove(names.filter((n) => !n.endsWith(`/${SNAPSHOT_FILE}`)));
      await options.marks.get(id)?.release();
    }
    // Only after the snapshots are gone: none of them names an object deleted.
    await options.lock?.assertHeld();
    const refused = await removeByFolder(store, deletable.read());
    result.objects.removed = deletableCount - refused;
    result.objects.locked += refused;
    if (config.lock) await extendLocks(store, config.lock, due, extend.read(), now, result);
    return result;
  } finally {
    deletable.close();
    extend.close();
  }
}

/** A sha256 as the listing and the staying snapshots' lines have it. */
interface ObjectUse {
  sha256: string;
  /** When its object was written (ms), or null when the bucket holds none. */
  modified: number | null;
  named: boolean;
  byDue: boolean;
}

/**
 * Every content object listed and every sha256 a staying snapshot's line (or an unfinished one's)
 * names, once each in sha256 order: when the object was written (null when there is none), whether
 * a line names it, and whether a line of a snapshot in `due` does. A manifest that cannot be read
 * names nothing, as before.
 */
async function* namedObjects(store: BucketStore, staying: SnapshotEntry[], partial: string[], due: Set<string>): AsyncGenerator<ObjectUse> {
  const sorted = new SortedSpill<Named>(SORTED_A_RUN);
  try {
    for await (const page of store.listDataPages()) for (const o of page) await sorted.add(o.sha256, { object: o.modified.getTime() });
    for (const s of [...staying, ...partial.map((id) => ({ id, dir: store.snapshotDir(id), doc: null }))]) {
      const manifest = await openSnapshotManifest(store, s).catch(() => null);
      if (!manifest) continue;
      const byDue = due.has(s.id);
      try {
        for await (const { line } of manifest.lines()) await sorted.add(line.sha256, { due: byDue });
      } catch {
        // Read as far as it could be.
      } finally {
        await manifest.close();
      }
    }
    let current = null as ObjectUse | null;
    for await (const [sha256, value] of sorted.sorted()) {
      if (current?.sha256 !== sha256) {
        if (current) yield current;
        current = { sha256, modified: null, named: false, byDue: false };
      }
      if ('object' in value) current.modified = value.object;
      else {
        current.named = true;
        current.byDue ||= value.due;
      }
    }
    if (current) yield current;
  } finally {
    sorted.close();
  }
}

/**
 * Deletes `names` (content objects in sha256 order, so a folder of `data/` at a time): one
 * request's listing of versions a folder, as when they were deleted all at once. Answers how many
 * were refused (locked).
 */
async function removeByFolder(store: BucketStore, names: Iterable<string>): Promise<number> {
  let refused = 0;
  let batch: string[] = [];
  const flush = async (): Promise<void> => {
    refused += new Set((await store.bucket.remove(batch)).map((r) => r.name)).size;
    batch = [];
  };
  for (const name of names) {
    if (batch.length > 0 && folderOf(batch[0]!) !== folderOf(name)) await flush();
    batch.push(name);
  }
  if (batch.length > 0) await flush();
  return refused;
}

const folderOf = (name: string): string => name.slice(0, name.lastIndexOf('/') + 1);

/** The snapshots of `ids` whose objects have less than half of `lock.days` left (or no record of it). */
function dueForExtension(store: BucketStore, lock: ObjectLock, ids: string[], now: Date): string[] {
  return ids.filter((id) => {
    const until = store.lockedUntil.get(id);
    return !until || until.getTime() - now.getTime() < (lock.days * 86_400_000) / 2;
  });
}

/**
 * Moves the retain-until of `shas` (every object a snapshot of `due` names, each once) to `days`
 * from now, and of those snapshots' own files; a marker records the new date, so that the next
 * forget spends no request on them.
 */
export async function extendLocks(store: BucketStore, lock: ObjectLock, due: string[], shas: Iterable<string>, now: Date, result: Pick<BucketForgetResult, 'extended'>): Promise<void> {
  if (due.length === 0) return;
  const until = retainUntil(lock, now.getTime());
  let objects = 0;
  for (const sha of shas) {
    await store.bucket.retain(dataName(sha), lock, until);
    objects += 1;
  }
  for (const id of due) {
    for (const file of ['manifest.jsonl', SNAPSHOT_FILE]) await store.bucket.retain(`${SNAPSHOTS_DIR}/${id}/${file}`, lock, until);
    await store.markLockedUntil(id, until);
  }
  result.extended = { objects, snapshots: due };
}
