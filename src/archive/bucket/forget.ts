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
import { SNAPSHOT_FILE, SNAPSHOTS_DIR, isAccepted, parseSnapshotId, type SnapshotEntry } from '../store.js';
import type { ForgetResult, RetentionPolicy } from '../forget.js';
import { describeSource, sameSource, type ExportSource } from '../../sinks/source.js';
import type { TargetLock } from '../../util/target-lock.js';
import { retainUntil } from './s3.js';
import { dataName, type BucketStore } from './store.js';
import { whoReads, type HeldMark } from '../readers.js';
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

/** Removes the snapshots decided on, then the objects no remaining snapshot names. */
async function forgetUnread(store: BucketStore, decision: BucketForgetResult['decision'], options: Decided): Promise<BucketForgetResult> {
  const { now, snapshots, partial, locked, busy } = options;
  decision.keep.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const removing = new Set(decision.remove.map((r) => r.id));
  const result: BucketForgetResult = {
    keep: decision.keep.map((k) => k.id), remove: decision.remove.map((r) => r.id), decision, busy, locked,
    objects: { removed: 0, young: 0, locked: 0 }, extended: { objects: 0, snapshots: [] },
  };
  // What the snapshots that stay name, unfinished ones' manifests included.
  const named = new Set<string>();
  const staying = snapshots.filter((s) => !removing.has(s.id));
  const namedBy = new Map<string, Set<string>>();
  for (const s of [...staying, ...partial.map((id) => ({ id, dir: store.snapshotDir(id), doc: null }))]) {
    const lines = await store.readManifest(s).then((m) => [...m.lines.values()], () => []);
    const shas = new Set(lines.map((l) => l.sha256));
    namedBy.set(s.id, shas);
    for (const sha of shas) named.add(sha);
  }
  const data = await store.listData();
  const unused = [...data].filter(([sha]) => !named.has(sha));
  const old = unused.filter(([, o]) => now.getTime() - o.modified.getTime() >= (options.unusedOlderThanMs ?? DEFAULT_UNUSED_AGE_MS));
  result.objects.young = unused.length - old.length;
  const config = await store.readConfig();
  let deletable = old.map(([sha]) => dataName(sha));
  if (config.lock) {
    // One HEAD an object, for those about to go only: the retain-until is on each object.
    const free: string[] = [];
    for (const name of deletable) {
      const head = await store.bucket.head(name);
      if (head?.retainUntil && head.retainUntil > now) result.objects.locked += 1;
      else free.push(name);
    }
    deletable = free;
  }
  if (options.dryRun) {
    result.objects.removed = deletable.length;
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
  const refused = await store.bucket.remove(deletable);
  result.objects.removed = deletable.length - new Set(refused.map((r) => r.name)).size;
  result.objects.locked += new Set(refused.map((r) => r.name)).size;
  if (config.lock) await extendLocks(store, config.lock, staying.map((s) => s.id), namedBy, now, result);
  return result;
}

/**
 * Moves the retain-until of every object a staying snapshot names to `days` from now, for the
 * snapshots whose objects have less than half of `days` left (or no record of it); a marker
 * records the new date, so that the next forget spends no request on them.
 */
export async function extendLocks(store: BucketStore, lock: ObjectLock, ids: string[], namedBy: Map<string, Set<string>>, now: Date, result: Pick<BucketForgetResult, 'extended'>): Promise<void> {
  const due = ids.filter((id) => {
    const until = store.lockedUntil.get(id);
    return !until || until.getTime() - now.getTime() < (lock.days * 86_400_000) / 2;
  });
  if (due.length === 0) return;
  const until = retainUntil(lock, now.getTime());
  const done = new Set<string>();
  for (const id of due) {
    for (const sha of namedBy.get(id) ?? []) {
      if (done.has(sha)) continue;
      await store.bucket.retain(dataName(sha), lock, until);
      done.add(sha);
    }
    for (const file of ['manifest.jsonl', SNAPSHOT_FILE]) await store.bucket.retain(`${SNAPSHOTS_DIR}/${id}/${file}`, lock, until);
    await store.markLockedUntil(id, until);
  }
  result.extended = { objects: done.size, snapshots: due };
}
