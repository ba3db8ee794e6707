/**
 * The export pipelines (issue 4), as a chain of named stages (DESIGN.md section 2): list the files
 * with their download URLs, plan each file's path (keeping what an earlier run left intact, linking
 * what a snapshot had unchanged), download with bounded concurrency, and sink each file into a
 * folder, a zip or a snapshot with its manifest line; the report says what became of each. This
 * file checks the options and holds the target; the run itself is an ExportRun (export-run.ts).
 */
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { stageOptions } from '../stages/registry.js';
import type { ExportProgress } from '../stages/export/record.js';
import { SinkTarget, type ExportTarget } from '../stages/export/target.js';
import { removeEmptyDirs } from '../sinks/sink.js';
import { SnapshotTarget } from '../archive/export-target.js';
import type { SnapshotInfo } from '../archive/build.js';
import { insideArchiveProblem } from '../archive/store.js';
import { exportTargetProblem } from '../archive/target-check.js';
import { sourceOf } from '../sinks/source.js';
import { checkTargetSource } from '../archive/target-source.js';
import type { TargetLock } from '../util/target-lock.js';
import { lockTarget } from './target-lock.js';
import { ExportRun } from './export-run.js';
import type { ExportOptions, ExportResult } from './export-options.js';
import { followZipLink, isZipTarget } from './export-defaults.js';
import { isBucketAddress } from '../archive/bucket/address.js';
import { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY } from '../util/pacing.js';

export { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY, isZipTarget };
export { LARGE_BODY_CONCURRENCY, LARGE_FILE_CONNECTIONS, START_CONNECTIONS } from '../util/pacing.js';
export type { ExportProgress, ExportOptions, ExportResult };

/** The concurrency an export runs with when none is given. */
export const defaultConcurrency = (what: 'photos' | 'attachments'): number =>
  what === 'photos' ? PHOTO_EXPORT_CONCURRENCY : DEFAULT_EXPORT_CONCURRENCY;

/** The kind of target `options` names: an archive, a zip (a name ending in `.zip`) or a folder. */
const kindOf = (options: ExportOptions): 'archive' | 'zip' | 'folder' =>
  options.archive ? 'archive' : isZipTarget(options.out) ? 'zip' : 'folder';

/** What the run writes into: its sink, and for an archive the snapshot it builds. */
function targetOf(options: ExportOptions, lock: TargetLock | undefined): ExportTarget<SnapshotInfo> {
  if (!options.archive) return new SinkTarget(options.out, isZipTarget(options.out));
  return new SnapshotTarget(options.out, options.archive, async () => lock?.assertHeld());
}

/**
 * Exports photos or attachments into a folder or a zip, with a `manifest.jsonl` listing each
 * file's member, size and sha256. A rerun into the same place downloads only what is missing or
 * changed. Takes the target's lock (unless the caller holds it: `lock: false`), so two runs never
 * write the same one.
 */
export async function runExport(options: ExportOptions): Promise<ExportResult> {
  if (options.archive && isBucketAddress(options.out)) return runBucketExport(options, options.archive);
  if (!options.archive) options = { ...options, out: await followZipLink(options.out) };
  const where = `${options.what} export`;
  let since: string | undefined;
  let concurrency: number;
  let held: HeldTarget | null = null;
  try {
    // The list and download stages' options, through the schemas pipeline files use (stages/registry.ts).
    since = stageOptions('list', { since: options.since }, where).since;
    concurrency = stageOptions('download', { concurrency: options.concurrency }, where).concurrency ?? defaultConcurrency(options.what);
    if (options.archive && (options.since !== undefined || isZipTarget(options.out))) {
      throw new RangeError(`an archive is a folder and each snapshot holds every file: ${options.since !== undefined ? 'since cannot be given with archive' : `${options.out} names a zip`}`);
    }
    if (options.lock !== false) held = await holdTarget(options);
    else {
      // The caller checked and locked the target; only a place inside an archive is refused here too.
      const inside = options.archive ? null : await insideArchiveProblem(options.out, isZipTarget(options.out));
      if (inside) throw new RangeError(inside);
    }
  } catch (error) {
    // A snapshot opened for this run leaves nothing of what it placed ahead.
    await options.archive?.opening?.then((build) => build.discard(), () => undefined);
    throw error;
  }
  try {
    const source = sourceOf(options.client.options.baseUrl, options.client.options.consumerKey);
    try {
      // Under the lock, before anything is written: another company's files are never mixed in.
      await checkTargetSource(options.out, kindOf(options), source);
    } catch (error) {
      await options.archive?.opening?.then((build) => build.discard(), () => undefined);
      throw error;
    }
    const lock = held?.lock ?? options.held;
    return await new ExportRun(options, { where, since, concurrency, lock, source }, targetOf(options, lock)).run();
  } finally {
    await held?.lock.release();
    // A folder made for the lock, left empty by a run that could not list, goes again.
    if (held) await removeEmptyDirs(held.dir, held.made);
  }
}

/**
 * An export into a bucket archive (DESIGN.md section 13): the same run, into a BucketTarget, under
 * the bucket archive's lock (taken here unless the caller holds it: `lock: false`, `held`).
 */
async function runBucketExport(options: ExportOptions, archive: NonNullable<ExportOptions['archive']>): Promise<ExportResult> {
  const where = `${options.what} export`;
  const concurrency = stageOptions('download', { concurrency: options.concurrency }, where).concurrency ?? defaultConcurrency(options.what);
  if (options.since !== undefined) throw new RangeError('each snapshot holds every file: since cannot be given with archive');
  const [{ BucketStore }, { BucketTarget }, { lockBucketArchive }] = await Promise.all([
    import('../archive/bucket/store.js'), import('../archive/bucket/export-target.js'), import('../archive/bucket/lock.js'),
  ]);
  const store = BucketStore.open(options.out, archive.s3);
  try {
    const own = options.lock === false ? undefined : await lockBucketArchive(store, { command: `runExport (${options.what}) in ${process.argv[1] ?? 'node'}` });
    try {
      const lock = own ?? options.held;
      const source = sourceOf(options.client.options.baseUrl, options.client.options.consumerKey);
      const target = new BucketTarget(store, { pipeline: archive.pipeline, maxDelete: archive.maxDelete, lock: archive.objectLock }, lock);
      return await new ExportRun(options, { where, since: undefined, concurrency, lock, source }, target).run();
    } finally {
      await own?.release();
    }
  } finally {
    store.close();
  }
}

/** A target runExport locked itself, and the first folder it made for it (undefined when none). */
interface HeldTarget {
  lock: TargetLock;
  dir: string;
  made: string | undefined;
}

/**
 * The target of a run that takes its own lock: refused when it is not an export (unless `force`)
 * or is the wrong kind (src/archive/target-check.ts, as the CLI and pipeline runs check), then locked.
 */
async function holdTarget(options: ExportOptions): Promise<HeldTarget> {
  const kind = kindOf(options);
  const zip = kind === 'zip';
  const problem = await exportTargetProblem(options.out, { kind, shown: options.out, force: options.force, forceHow: 'pass force: true' });
  if (problem) throw new RangeError(problem);
  const target = resolve(options.out);
  const dir = zip ? dirname(target) : target;
  let made: string | undefined;
  try {
    made = await mkdir(dir, { recursive: true });
  } catch (error) {
    throw new Error(`${options.out}: the folder ${dir} cannot be made (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, { cause: error });
  }
  try {
    const lock = await lockTarget({ kind, path: target }, { command: `runExport (${options.what}) in ${process.argv[1] ?? 'node'}` });
    return { lock, dir, made };
  } catch (error) {
    await removeEmptyDirs(dir, made);
    throw error;
  }
}
