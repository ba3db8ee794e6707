/**
 * `archive restore [@ID] --out DIR|ZIP [--member CODE]`: a snapshot, or the files of some of its
 * members, copied out as an ordinary export folder or zip (DESIGN.md section 4) through the
 * export's own sinks, so the result verifies and imports like any export. Each file's bytes are
 * checked against the snapshot's manifest as they are copied: a file that differs is left out and
 * reported, never written. The copies share nothing with the archive. A rerun into the same place
 * copies only what is not there yet.
 */
import { createReadStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { FolderSink } from '../sinks/folder.js';
import type { ExportSink } from '../sinks/sink.js';
import { TargetError } from '../sinks/target-error.js';
import { LinkCheck, compareLines, manifestKey, type ManifestLine, type ManifestLines } from '../sinks/manifest.js';
import { RunReport } from '../stages/report.js';
import type { SnapshotEntry } from './store.js';
import { openManifestInOrder } from '../sinks/manifest-order.js';
import type { ArchiveStore } from './archive-store.js';
import { LockLostError, lockCheck, type TargetLock } from '../util/target-lock.js';

export interface RestoreResult {
  snapshot: string;
  out: string;
  report: RunReport;
}

const isZip = (out: string): boolean => out.toLowerCase().endsWith('.zip');

/**
 * Copies one file into the sink, hashing it on the way; answers why it was not written, or null.
 * `held` is checked before the file is put in place: a file of a run whose lock was taken over is
 * left as it is, uncommitted (its temporary name may be the other run's too).
 */
async function copyInto(sink: ExportSink, from: string | (() => Promise<Buffer>), line: ManifestLine, held: () => Promise<void>): Promise<string | null> {
  const writer = await sink.open(line.path, line.size);
  const hash = createHash('sha256');
  let size = 0;
  try {
    const chunks = typeof from === 'string' ? createReadStream(from) as AsyncIterable<Buffer> : [await from()];
    for await (const chunk of chunks) {
      hash.update(chunk);
      size += chunk.length;
      await writer.write(chunk);
    }
  } catch (error) {
    await writer.abort();
    return `cannot be read: ${(error as Error).message}`;
  }
  const sha256 = hash.digest('hex');
  if (size !== line.size || sha256 !== line.sha256) {
    await writer.abort();
    return size !== line.size ? `size ${size} bytes in the archive, the manifest says ${line.size}` : 'sha256 in the archive differs from the manifest';
  }
  await held();
  await writer.commit();
  await sink.record(line);
  return null;
}

/** Members asked for that the snapshot holds no file of: nothing was restored. */
export class UnknownMembersError extends Error {}

/**
 * What a restore copies: the snapshot, what is wrong with lines of its manifest, and the lines to
 * restore in manifest order, read from the manifest each time they are gone through rather than
 * held (issue 46).
 */
export interface RestorePlan {
  snapshot: SnapshotEntry;
  /** The manifest's problems (those lines are not restored) and its source. */
  manifest: Pick<ManifestLines, 'problems' | 'source'>;
  /** How many files the restore copies. */
  count: number;
  /** The lines to restore, in manifest order. */
  lines(): AsyncGenerator<ManifestLine>;
  /** Every line of the snapshot, of the members not restored too, in manifest order. */
  every(): AsyncGenerator<ManifestLine>;
  /** Reads one file's stored bytes, where the snapshot is no folder (a bucket archive's objects). */
  read?: (line: ManifestLine) => Promise<Buffer>;
  /** Removes the temporary files of a manifest that had to be sorted. */
  close(): Promise<void>;
}

/**
 * The plan of restoring `snapshot`: every file, or those of `members` (by code). A member the
 * snapshot holds no file of is an UnknownMembersError, before anything is written: a mistyped code
 * restores nothing rather than an export of the other members' files. A folder archive's manifest
 * is read in order a part at a time (manifest-order.ts); a bucket archive's too, once downloaded.
 */
export async function planRestore(snapshot: SnapshotEntry, members?: readonly string[], store?: ArchiveStore): Promise<RestorePlan> {
  const read = store?.kind === 'bucket' ? { read: (line: ManifestLine) => store.readFile(snapshot, line) } : {};
  let all: { problems: string[]; source?: ManifestLines['source']; lines: () => AsyncGenerator<ManifestLine>; close: () => Promise<void> };
  // A bucket's manifest is downloaded to a temporary file as it arrives, then read as a folder's is.
  const file = store && store.kind !== 'folder' ? await store.manifestFile(snapshot) : null;
  try {
    const manifest = await openManifestInOrder(snapshot.dir, file ? { file: file.file } : {});
    all = {
      ...manifest, lines: async function* () { for await (const { line } of manifest.lines()) yield line; },
      close: async () => {
        await manifest.close();
        await file?.release();
      },
    };
  } catch (error) {
    await file?.release();
    throw error;
  }
  const wanted = members ? new Set(members) : null;
  const lines = async function* (): AsyncGenerator<ManifestLine> {
    for await (const line of all.lines()) if (!wanted || wanted.has(line.code)) yield line;
  };
  let count = 0;
  // The members asked for that the snapshot holds: without --member, no set of every member.
  const held = new Set<string>();
  try {
    for await (const line of lines()) {
      count += 1;
      if (wanted) held.add(line.code);
    }
    const missing = wanted ? [...wanted].filter((code) => !held.has(code)) : [];
    if (missing.length > 0) throw new UnknownMembersError(`snapshot ${snapshot.id} holds no file of ${missing.join(', ')}; nothing was restored`);
  } catch (error) {
    await all.close();
    throw error;
  }
  return { snapshot, manifest: { problems: all.problems, ...(all.source ? { source: all.source } : {}) }, count, lines, every: all.lines, ...read, close: all.close };
}

/**
 * Why restoring `plan` into `out` would mix snapshots, or null: the export already there (an
 * earlier restore's, say) lists files the snapshot does not hold, and a restore, like any export,
 * keeps what is there. Files of the same snapshot (a restore stopped, or other members' files) do
 * not mix it. The export's lines and the snapshot's are merged in manifest order.
 */
export async function mixedRestoreProblem(plan: RestorePlan, out: string, zip: boolean): Promise<string | null> {
  let earlier: AsyncGenerator<ManifestLine>;
  let close = async (): Promise<void> => undefined;
  if (zip) {
    const { EarlierZip } = await import('../sinks/zip-earlier-run.js');
    const opened = await EarlierZip.open(out);
    if (!opened) return null;
    // Its intact lines in manifest order, kept on disk and read back a line at a time.
    let intact: Awaited<ReturnType<typeof opened.intactInTemp>>;
    try {
      intact = await opened.intactInTemp();
    } finally {
      opened.close();
    }
    close = intact.close;
    earlier = (async function* () { yield* intact.index.values(); })();
  } else {
    const manifest = await openManifestInOrder(out).catch(() => null);
    if (!manifest) return null;
    close = () => manifest.close();
    earlier = (async function* () { for await (const { line } of manifest.lines()) yield line; })();
  }
  // Every line of the snapshot's, not only the members' planned: other members' files do not mix it.
  const snapshot = plan.snapshot;
  const held = plan.every();
  const foreign: string[] = [];
  let count = 0;
  try {
    let theirs = (await held.next()).value;
    for await (const line of earlier) {
      while (theirs && compareLines(theirs, line) < 0) theirs = (await held.next()).value;
      if (theirs && compareLines(theirs, line) === 0) continue;
      count += 1;
      if (foreign.length < 3) foreign.push(line.path);
    }
  } finally {
    await held.return(undefined);
    await earlier.return(undefined);
    await close();
  }
  if (count === 0) return null;
  const some = foreign.join(', ') + (count > 3 ? `, and ${count - 3} more` : '');
  return `${out} already holds files that snapshot ${snapshot.id} does not (${some}): the restore would keep them beside its own. Name a new folder${zip ? ' or zip' : ''}`;
}

export interface RestoreOptions {
  /** Stops the restore as SIGINT/SIGTERM do (reason: the signal's name): the output is left for a rerun. */
  signal?: AbortSignal;
  /**
   * The lock the caller holds on `out` (DESIGN.md section 8). Should another run take it over, the
   * restore ends with a `LockLostError`: no file more is put in place, the zip is not renamed
   * and the folder's manifest not completed, and what the other run writes there is left alone.
   */
  lock?: TargetLock;
  /** False: the report keeps counts, not an item a file (no one reads them: the CLI without --report). */
  keepItems?: boolean;
}

export async function restoreSnapshot(plan: RestorePlan, out: string, options: RestoreOptions = {}): Promise<RestoreResult> {
  const { snapshot, manifest } = plan;
  const held = lockCheck(options.lock);
  const report = new RunReport('archive restore');
  // A file's item is kept on disk, or only counted when no one reads the items (issue 46).
  if (options.keepItems === false) report.countOnly();
  else report.keepItemsOnDisk();
  for (const problem of manifest.problems) report.notes.push(`${join(snapshot.dir, 'manifest.jsonl')} ${problem}; that line is not restored`);
  const onDisk = async <T>(step: () => Promise<T>): Promise<T> => {
    try {
      return await step();
    } catch (error) {
      throw error instanceof TargetError || error instanceof LockLostError ? error : new TargetError(out, error);
    }
  };
  // The restored export records where the snapshot's files came from.
  const source = snapshot.doc?.source ?? manifest.source;
  const sink: ExportSink = await onDisk(async () => (isZip(out) ? (await import('../sinks/zip.js')).ZipSink.create(out, source) : FolderSink.create(out, { source })));
  try {
    // What an earlier restore into `out` left: as many lines as it holds, none for a new output.
    const intact = await onDisk(() => sink.intactFromEarlierRun());
    // Gone through as the sink keeps them, and asked again below: neither side is held whole.
    const isAlready = (line: ManifestLine): boolean => intact.size > 0 && intact.get(manifestKey(line))?.sha256 === line.sha256;
    const already = async function* (): AsyncGenerator<ManifestLine> {
      for await (const line of plan.lines()) if (isAlready(line)) yield line;
    };
    const notKept = new Set((await onDisk(() => sink.keep(already(), options.signal))).map(manifestKey));
    const kept = (line: ManifestLine): boolean => isAlready(line) && !notKept.has(manifestKey(line));
    const links = new LinkCheck(snapshot.dir);
    let reached = 0;
    for await (const line of plan.lines()) {
      if (options.signal?.aborted) break;
      reached += 1;
      const base = { key: manifestKey(line), code: line.code, file_name: line.file_name, path: line.path, size: line.size, sha256: line.sha256 };
      if (kept(line)) {
        report.add({ ...base, outcome: 'skipped', reason: 'already restored: size and sha256 match' });
        continue;
      }
      // An object of a bucket archive is named by its sha256: no path of the manifest leads to it.
      const link = plan.read ? null : await links.linkIn(line.path);
      const from = plan.read ? () => plan.read!(line) : join(snapshot.dir, line.path);
      const why = link ? LinkCheck.reason(link) : await onDisk(() => copyInto(sink, from, line, held));
      report.add(why ? { ...base, outcome: 'failed', reason: why } : { ...base, outcome: 'ok' });
    }
    // The zip renamed into place, or its .partial or the folder's manifest completed, only while
    // the lock is still this run's.
    await options.lock?.assertHeld();
    if (reached < plan.count) {
      await onDisk(() => sink.pause());
      report.interrupted = { signal: options.signal?.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT', total: plan.count };
    } else await onDisk(() => sink.finish());
  } catch (error) {
    // A run whose lock was taken over closes what it has open and removes nothing: the temporary
    // files and the target are the other run's now.
    if (error instanceof LockLostError || options.lock?.signal.aborted) await sink.letGo().catch(() => undefined);
    else await sink.abort().catch(() => undefined);
    throw error;
  } finally {
    await plan.close();
  }
  report.finish();
  return { snapshot: snapshot.id, out, report };
}
