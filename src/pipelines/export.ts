/**
 * The export pipelines (issue 4), as a chain of named stages (DESIGN.md section 2): list the files
 * with their download URLs, plan each file's path (keeping what an earlier run left intact, linking
 * what a snapshot had unchanged), download with bounded concurrency, and sink each file into a
 * folder, a zip or a snapshot with its manifest line; the report says what became of each.
 */
import { setMaxListeners } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { WdsClient } from '../client/client.js';
import type { DownloadJob, JobFeed } from '../stages/export/download.js';
import type { UrlLister } from '../stages/export/list-urls.js';
import { EarlyDownloads } from '../stages/export/early.js';
import { RunReport, interruptedBy } from '../stages/report.js';
import { stageOptions } from '../stages/registry.js';
import { openLister, type Listed } from '../stages/export/list.js';
import { planExport, realign } from '../stages/export/plan.js';
import { DownloadStage } from '../stages/export/transfer.js';
import { ExportRecorder, asTargetError, onDisk, openSink, type ExportProgress } from '../stages/export/record.js';
import { removeEmptyDirs, type ExportSink } from '../sinks/sink.js';
import { SnapshotBuild, type SnapshotInfo } from '../archive/build.js';
import { insideArchiveProblem } from '../archive/store.js';
import { exportTargetProblem } from '../sinks/target-check.js';
import { manifestKey, type ManifestLine } from '../sinks/manifest.js';
import { sourceOf, type ExportSource } from '../sinks/source.js';
import { checkTargetSource } from '../sinks/target-source.js';
import { DEFAULT_RETRY, type RetryPolicy } from '../client/retry.js';
import { exportEnded, exportStarted } from '../util/runtime.js';
import type { TargetLock } from '../util/target-lock.js';
import { lockTarget } from './target-lock.js';
import { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY, followZipLink, isZipTarget } from './export-defaults.js';

export { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY, isZipTarget };
export { LARGE_BODY_CONCURRENCY, LARGE_FILE_CONNECTIONS, START_CONNECTIONS } from '../stages/export/transfer.js';
export type { ExportProgress };

/** Options of {@link runExport}. */
export interface ExportOptions {
  /** The client to list and download with. */
  client: WdsClient;
  /** Members' photos, or the files of sheets' file parts. */
  what: 'photos' | 'attachments';
  /** A folder, or a file ending in `.zip`. */
  out: string;
  /** Only files updated on or after this date (`YYYY-MM-DD`). Default: every file. */
  since?: string;
  /** Attachments: only this sheet. Default: every sheet with a file part. */
  sheet?: number;
  /** Attachments: only these sheets (instead of `sheet`). Default: every sheet with a file part. */
  sheets?: number[];
  /** Attachments: only this file part of the one sheet named. Default: every file part of the sheets. */
  field?: number;
  /** Downloads in flight at once. Default 64 for photos, 16 for attachments (`defaultConcurrency`). */
  concurrency?: number;
  /** How each download is retried. Defaults: 8 attempts, backoff from 100 ms up to 4 s, Retry-After waits up to 40 minutes. */
  retry?: Partial<RetryPolicy>;
  /**
   * Whether the report keeps each file's item (the default). With false it keeps the counts and
   * the first problems only (RunReport.countOnly): for a caller that writes no per-file report.
   */
  keepItems?: boolean;
  /** Called as files are listed, downloaded, skipped or fail. */
  onProgress?: (progress: ExportProgress) => void;
  /**
   * Stops the run (the CLI aborts it on SIGINT or SIGTERM, with the signal's name as the reason):
   * no download starts, those on their way are dropped with their temporary files, files already
   * received land, the output is left for a rerun to continue, and the result's report has
   * `interrupted` set.
   */
  signal?: AbortSignal;
  /**
   * Makes `out` a snapshot archive (a folder of `snapshots/<id>/`, each an export folder with its
   * `snapshot.json`, and `latest`): the run builds a new snapshot, hard-linking the files unchanged
   * since the previous one and downloading the rest. The caller holds the archive's lock
   * (`<out>/.wds-lock`). Cannot be combined with `since`: a snapshot holds every file.
   */
  archive?: {
    /** Recorded in `snapshot.json` as the pipeline that made the snapshot. */
    pipeline: string;
    /**
     * How many of the previous snapshot's files may be deleted (a count, or a share such as
     * `50%`, the default): a run that finds more holds its snapshot back, `latest` unmoved, and
     * its `snapshot.held` says why. `100%` allows any.
     */
    maxDelete?: import('../archive/build.js').MaxDelete;
    /**
     * @internal The snapshot, opened already (`SnapshotBuild.open` of `out`, under the lock the
     * caller holds, with `lock: false`), so that it started before this run's modules loaded. The
     * export then owns it: it finishes, pauses or discards it.
     */
    opening?: Promise<SnapshotBuild>;
  };
  /**
   * Whether the run takes its target's lock (DESIGN.md section 8): `FOLDER/.wds-lock`,
   * `NAME.zip.lock` beside a zip, or the archive's `.wds-lock`, held until the run ends. The
   * default, true: a target another run holds is refused at once with a `TargetLockedError` that
   * names it, and a target that is not an export is refused unless `force` (see there). False when
   * the caller holds the lock and has checked the target (the CLI does, before its first request).
   */
  lock?: boolean;
  /**
   * @internal The lock the caller holds on `out` (with `lock: false`). Another run that takes it
   * over stops this one: it ends with a `LockLostError`, without completing `out`, and leaves what
   * that run writes alone.
   */
  held?: TargetLock;
  /**
   * Writes into a folder of other files that is no export folder (it holds names and no
   * manifest.jsonl), or replaces a file named `*.zip` that is no export zip. Without it such a
   * target is refused with a RangeError before anything is written: the export could replace a
   * file of the caller's with one of the service's at the same path. Default false.
   */
  force?: boolean;
}

/** What an export did. */
export interface ExportResult {
  /** Each file's outcome (`ok`, `skipped`, `failed`) and why; `interrupted` when it was stopped. */
  report: RunReport;
  /** Listings asked for again because download URLs expired. */
  relists: number;
  /** Files that changed on the service while the export ran (the newer version was downloaded). */
  changed: number;
  /** The folder or zip written (the archive, for an archive run). */
  out: string;
  /** The snapshot an archive run made (or left as `.partial` when stopped). */
  snapshot?: SnapshotInfo;
}

/** The concurrency an export runs with when none is given. */
export const defaultConcurrency = (what: 'photos' | 'attachments'): number =>
  what === 'photos' ? PHOTO_EXPORT_CONCURRENCY : DEFAULT_EXPORT_CONCURRENCY;

/**
 * A signal of the run's own, aborted with the caller's (and its reason): every download under way
 * listens to it, more than the 10 listeners past which Node warns of a leak on the caller's signal.
 */
function runSignal(outer: AbortSignal | undefined, listeners: number): { signal: AbortSignal; dispose: () => void; abort: (reason: unknown) => void } {
  const inner = new AbortController();
  setMaxListeners(listeners, inner.signal);
  const abort = (reason: unknown): void => inner.abort(reason);
  if (!outer) return { signal: inner.signal, dispose: () => undefined, abort };
  const onAbort = (): void => inner.abort(outer.reason);
  if (outer.aborted) onAbort();
  else outer.addEventListener('abort', onAbort, { once: true });
  return { signal: inner.signal, dispose: () => outer.removeEventListener('abort', onAbort), abort };
}

/** What a run writes with: the sink and what an earlier run left in it, the recorder, and the downloads waiting for their jobs. */
interface Stage {
  build: SnapshotBuild | null;
  sink: ExportSink;
  intact: Map<string, ManifestLine>;
  recorder: ExportRecorder;
  downloads: DownloadStage;
  /** The downloads' jobs: those started early, then the plan's, then the end. */
  feed: JobFeed<DownloadJob>;
  downloading: Promise<void>;
}

/**
 * A run that ends before its plan (the listing failed, or it was stopped while the service listed
 * before any file started): the downloads started early stop, and the snapshot opened for it goes
 * with what they downloaded, so the archive is left as it was. A `.partial` continued from an
 * earlier run stays, with the files its manifest lists, for the next run.
 */
async function abandon(staging: Promise<Stage> | null, opening: Promise<SnapshotBuild> | null, abort: (reason: unknown) => void, reason: unknown): Promise<void> {
  const stage = await stopStage(staging, abort, reason, (sink) => sink.abort());
  await opening?.then((build) => build.discard(Boolean(stage)), () => undefined);
}

/** Stops the downloads of a run that ends early, waits for those under way, then `end`s its sink. */
async function stopStage(staging: Promise<Stage> | null, abort: (reason: unknown) => void, reason: unknown, end: (sink: ExportSink) => Promise<void>): Promise<Stage | null> {
  abort(reason);
  const stage = (await staging?.catch(() => null)) ?? null;
  if (stage) {
    stage.feed.end();
    await stage.downloading.catch(() => undefined);
    await stage.downloads.close();
    await end(stage.sink).catch(() => undefined);
  }
  return stage;
}

/**
 * Exports photos or attachments into a folder or a zip, with a `manifest.jsonl` listing each
 * file's member, size and sha256. A rerun into the same place downloads only what is missing or
 * changed. Takes the target's lock (unless the caller holds it: `lock: false`), so two runs never
 * write the same one.
 */
export async function runExport(options: ExportOptions): Promise<ExportResult> {
  if (!options.archive) options = { ...options, out: await followZipLink(options.out) };
  const where = `${options.what} export`;
  let since: string | undefined;
  let concurrency: number;
  let held: HeldTarget | null = null;
  try {
    // The list and download stages' options, through the schemas pipeline files use (stages/options.ts).
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
      await checkTargetSource(options.out, options.archive ? 'archive' : isZipTarget(options.out) ? 'zip' : 'folder', source);
    } catch (error) {
      await options.archive?.opening?.then((build) => build.discard(), () => undefined);
      throw error;
    }
    return await exportHeld(options, where, since, concurrency, held?.lock ?? options.held, source);
  } finally {
    await held?.lock.release();
    // A folder made for the lock, left empty by a run that could not list, goes again.
    if (held) await removeEmptyDirs(held.dir, held.made);
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
 * or is the wrong kind (src/sinks/target-check.ts, as the CLI and pipeline runs check), then locked.
 */
async function holdTarget(options: ExportOptions): Promise<HeldTarget> {
  const zip = !options.archive && isZipTarget(options.out);
  const problem = await exportTargetProblem(options.out, { kind: options.archive ? 'archive' : zip ? 'zip' : 'folder', shown: options.out, force: options.force, forceHow: 'pass force: true' });
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
    const lock = await lockTarget({ kind: options.archive ? 'archive' : zip ? 'zip' : 'folder', path: target }, { command: `runExport (${options.what}) in ${process.argv[1] ?? 'node'}` });
    return { lock, dir, made };
  } catch (error) {
    await removeEmptyDirs(dir, made);
    throw error;
  }
}

/**
 * A run whose lock another run took over: its downloads stop and what it has open is closed, but
 * nothing on disk is removed or completed, since the target is that run's now.
 */
async function letGo(staging: Promise<Stage> | null, abort: (reason: unknown) => void, reason: unknown): Promise<never> {
  await stopStage(staging, abort, reason, (sink) => sink.letGo());
  throw reason;
}

/** runExport once its options are checked and its target is held (`lock`, when there is one). */
async function exportHeld(options: ExportOptions, where: string, since: string | undefined, concurrency: number, lock: TargetLock | undefined, source: ExportSource): Promise<ExportResult> {
  const { client } = options;
  const report = new RunReport(where);
  if (options.keepItems === false) report.countOnly();
  else {
    report.keepItemsOnDisk();
    report.trackKeys();
  }
  // archiver and its dependencies are loaded only for a zip (a few MB of memory a folder export
  // does without), and while the service lists the files.
  const zipModule = isZipTarget(options.out) && !options.archive ? import('../sinks/zip.js') : null;
  zipModule?.catch(() => undefined); // awaited in openSink; not an unhandled rejection meanwhile
  // An archive's snapshot is opened (unless the caller opened it already), and its earlier files
  // placed, while the service lists the files; a run that lists nothing leaves no new snapshot.
  const opening = options.archive ? onDisk(options.out, () => options.archive!.opening ?? SnapshotBuild.open(options.out, options.archive!.pipeline)) : null;
  opening?.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile

  // Downloads under way (twice the concurrency, see `pool`) and the sink's copying listen to it.
  const { signal, dispose, abort } = runSignal(options.signal, 2 * concurrency + 8);
  // A lock another run took over stops the downloads at once; the run then ends by `letGo`.
  const onLost = (): void => abort(lock!.signal.reason);
  if (lock?.signal.aborted) onLost();
  else lock?.signal.addEventListener('abort', onLost, { once: true });
  /** The lock's loss, once the heartbeat or a check found it; null while it is ours. */
  const lost = (): unknown => (lock?.signal.aborted ? lock.signal.reason : null);
  const retry = { ...DEFAULT_RETRY, maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 4_000, ...options.retry };
  exportStarted();
  /** Every way out of the run: the process's memory tuning for downloads ends with them (src/util/runtime.ts). */
  const closeRun = (): void => {
    exportEnded();
    dispose();
    lock?.signal.removeEventListener('abort', onLost);
  };
  /** The sink with what an earlier run left there, the recorder and the downloads, waiting for their jobs. */
  const openStage = async (build: SnapshotBuild | null, lister: UrlLister): Promise<Stage> => {
    if (build) build.source = source;
    const { sink, intact } = await openSink(build ? build.dir : options.out, zipModule, { readOnly: build !== null, source });
    const recorder = new ExportRecorder(sink, report, 0, options.onProgress);
    const downloads = new DownloadStage({ concurrency, lister, sink, retry, signal, logger: client.options.logger, onRetry: () => recorder.retried() });
    const feed = downloads.feed();
    const downloading = downloads.run(feed, (result) => recorder.downloaded(result, lister.relists));
    downloading.catch(() => undefined); // awaited by the run; not an unhandled rejection meanwhile
    return { build, sink, intact, recorder, downloads, feed, downloading };
  };

  // list
  const sheets = options.sheets ?? (options.sheet !== undefined ? [options.sheet] : undefined);
  // An archive's sink and downloads are made as soon as the snapshot is open, while the service
  // lists, so that each file part's changed files start as its listing comes in (EarlyDownloads).
  // A folder's or a zip's wait for the listing: a run that cannot list touches nothing there.
  const early = opening ? new EarlyDownloads() : null;
  let staging: Promise<Stage> | null = null;
  let listed: Listed | null = null;
  let relists = (): number => 0;
  try {
    // The run's signal cuts the listing: a stop while the service lists (or while a 429 makes the
    // run wait) ends the run now, not once the answer comes.
    const { lister, notes } = await openLister(client, { what: options.what, sheets, field: options.field, since }, signal);
    relists = () => lister.relists;
    if (opening) {
      staging = opening.then(async (build) => {
        const stage = await openStage(build, lister);
        early!.ready({ feed: stage.feed, reference: build.reference(), eligible: build.resumed === null && build.previous !== null && build.pathsUnique });
        return stage;
      });
      staging.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    }
    listed = { files: await lister.listAll(early ? (files) => early.offer(files) : undefined), lister, notes };
  } catch (error) {
    // A listing cut by the caller's stop ends the run as stopped, below.
    if (lost()) await letGo(staging, abort, lost()).finally(closeRun);
    if (!options.signal?.aborted) {
      await abandon(staging, opening, abort, error);
      closeRun();
      throw error;
    }
  }
  if (listed) report.notes.push(...listed.notes);
  if (options.signal?.aborted) {
    // How many files there are is known only when the listing came in whole.
    report.interrupted = { signal: interruptedBy(options.signal), ...(listed ? { total: listed.files.length } : {}) };
    const stage = early && early.started.size > 0 ? await staging!.catch(() => null) : null;
    let snapshot: SnapshotInfo | undefined;
    if (stage?.build) {
      // Stopped while the service listed, once files had been started early: those that landed
      // stay in the snapshot's .partial, which the next run continues, as after any stop.
      stage.feed.end();
      await stage.downloading.catch(() => undefined);
      await stage.downloads.close();
      const { build, sink, recorder } = stage;
      await lock?.assertHeld().catch((error: unknown) => letGo(staging, abort, error).finally(closeRun));
      try {
        await onDisk(options.out, () => sink.pause(build.noteLine));
        snapshot = await onDisk(build.dir, () => build.pause(recorder.progress.failed));
      } catch (error) {
        await sink.abort().catch(() => undefined);
        await build.discard().catch(() => undefined);
        closeRun();
        throw asTargetError(options.out, error);
      }
    } else {
      // Stopped while the service listed the files, before any was started: nothing is written.
      if (lost()) await letGo(staging, abort, lost()).finally(closeRun);
      await abandon(staging, opening, abort, options.signal.reason);
    }
    closeRun();
    report.finish();
    return { report, relists: relists(), changed: 0, out: options.out, ...(snapshot ? { snapshot } : {}) };
  }
  // Not stopped: the listing came in whole (one that failed threw above).
  listed = listed!;
  const { lister } = listed;

  // sink: opened once the listing is in (an archive's, while it came in), with what an earlier run left there.
  let stage: Stage;
  try {
    stage = staging ? await staging : await openStage(null, lister);
  } catch (error) {
    if (lost()) await letGo(staging, abort, lost()).finally(closeRun);
    await abandon(staging, opening, abort, error);
    closeRun();
    throw error;
  }
  const { build, sink, intact, recorder, downloads, feed, downloading } = stage;
  recorder.listed(listed.files.length);
  let snapshot: SnapshotInfo | undefined;
  try {
    // plan
    // Files whose record moved (a record before theirs was deleted) keep their earlier lines.
    const earlier = realign(listed.files, intact);
    const reference = build ? realign(listed.files, build.reference()) : null;
    if (earlier.changed.length > 0) await onDisk(options.out, () => sink.relabel?.(earlier.changed) ?? Promise.resolve());
    const { jobs, kept: planned, link: plannedLinks, previousListed } = planExport(listed.files, earlier.lines, reference?.lines);
    // A file an archive run started early is downloaded, not linked as well.
    const link = early && early.started.size > 0 ? plannedLinks.filter(({ file }) => !early.started.has(file.key)) : plannedLinks;
    build?.noteListing(previousListed, reference?.movedFrom);
    // What a zip holds that this run lists no more (a member deleted since, a file older than
    // `since`) stays in it, as a folder keeps such files: an export adds and refreshes. A snapshot
    // follows deletions: a resumed one gives up what the service no longer lists.
    const gone = unlistedLines(earlier.lines, listed.files);
    const unlisted = build ? [] : gone;
    if (build && gone.length > 0) {
      await lock?.assertHeld();
      await onDisk(build.dir, () => sink.drop!(gone));
      report.notes.push(`${gone.length} file${gone.length === 1 ? '' : 's'} the interrupted run had placed in the snapshot, which the service lists no more, ${gone.length === 1 ? 'was' : 'were'} taken out of it`);
    }
    // Files a zip's earlier run holds but cannot hand over whole are downloaded again, to the
    // same path; those a stop kept it from reaching are not reported.
    const notKept = new Set((await onDisk(options.out, () => sink.keep(unlisted.length > 0 ? [...planned, ...unlisted] : planned, signal))).map(manifestKey));
    if (notKept.size > 0) {
      const files = new Map(listed.files.map((file) => [file.key, file]));
      for (const line of planned) {
        const file = notKept.has(manifestKey(line)) ? files.get(manifestKey(line)) : undefined;
        if (file) jobs.push({ file, path: line.path });
      }
      const dropped = signal?.aborted ? 0 : unlisted.filter((line) => notKept.has(manifestKey(line))).length;
      if (dropped > 0) report.notes.push(`${dropped} file${dropped === 1 ? '' : 's'} the zip held, which the service lists no more, failed their check in it (CRC-32, size or sha256) and ${dropped === 1 ? 'is' : 'are'} left out`);
    }
    // From here only the jobs hold the files, and `pool` lets each go once it is done with it: a
    // run of 20,000 files does not keep every download URL to its end.
    // A stopped run's report names the files it did not reach; only a report that keeps items needs them.
    const named = report.keepsItems ? listed.files.map(({ key, code, file_name }) => ({ key, code, file_name })) : null;
    listed.files = [];
    recorder.kept(planned.filter((line) => !notKept.has(manifestKey(line))));

    // download → sink (the files started early are downloading already)
    feed.push(early && early.started.size > 0 ? jobs.filter((job) => !early.started.has(job.file.key)) : jobs);
    feed.end();

    // An archive links its unchanged files while the others download, once the folders made ahead
    // are done, each batch recorded as it lands; a file it cannot link is downloaded after them.
    let linking: Promise<DownloadJob[]> | null = null;
    if (build && link.length > 0) {
      const lines = link.map(({ line }) => line);
      const how = (): string => `unchanged since snapshot ${build.previous}; ${build.copied ? 'copied' : 'hard-linked'} from it`;
      linking = onDisk(build.dir, () => build.linkUnchanged(lines, (line) => recorder.linked(line, how()), signal, downloading))
        .then((refused) => {
          // Rare (a damaged earlier snapshot): the files of the lines refused are looked up only then.
          if (refused.length === 0) return [];
          const files = new Map(link.map(({ file }) => [file.key, file]));
          return refused.map((line) => ({ file: files.get(manifestKey(line))!, path: line.path }));
        });
      linking.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    }

    try {
      await downloading;
    } finally {
      // A download's fatal error waits for the links under way before the sink is aborted.
      await linking?.catch(() => undefined);
    }
    const unlinked = (await linking) ?? [];
    if (unlinked.length > 0) {
      build?.noteRefetched(unlinked.map((job) => job.file.key));
      // Named before the downloads, which let each job go once done with it.
      const count = unlinked.length;
      const some = unlinked.slice(0, 5).map((job) => job.path).join(', ') + (count > 5 ? `, and ${count - 5} more` : '');
      await downloads.run(unlinked, (result) => recorder.downloaded(result, lister.relists));
      report.notes.push(`${count} file${count === 1 ? '' : 's'} unchanged at the service ${count === 1 ? 'was' : 'were'} downloaded again (counted repaired), not linked from snapshot ${build?.previous}: the copy there was missing or damaged (its size or change time not what the archive wrote, or found damaged by archive check --read-data): ${some}`);
    }

    // sink: the manifest, and the output complete (or left for a rerun to continue), only while
    // the lock is still this run's: another run's output is never completed or renamed over.
    await lock?.assertHeld();
    if (signal?.aborted && recorder.unreached > 0) {
      await onDisk(options.out, () => sink.pause(build?.noteLine));
      report.interrupted = { signal: interruptedBy(signal), total: recorder.progress.total };
      const reason = `not downloaded: the run was stopped (${report.interrupted.signal}) before it reached this file; run it again to fetch it`;
      if (named) report.addUnreached(named, reason);
      else report.countUnreached(recorder.unreached);
      if (build) snapshot = await onDisk(build.dir, () => build.pause(recorder.progress.failed));
    } else {
      await onDisk(options.out, () => sink.finish(build?.noteLine));
      if (build) {
        await lock?.assertHeld();
        snapshot = await onDisk(build.dir, () => build.finish(recorder.progress.failed, options.archive?.maxDelete));
      }
    }
    if (build?.copied) report.notes.push('this file system has no hard links: unchanged files were copied from the previous snapshot, and take their space again');
    if (build?.resumed) report.notes.push(`continued the snapshot an interrupted run left (${build.resumed}.partial)`);
  } catch (error) {
    if (lost()) await letGo(Promise.resolve(stage), abort, lost());
    // Downloads started early stop with the run.
    feed.end();
    abort(error);
    await downloading.catch(() => undefined);
    await sink.abort().catch(() => undefined);
    await build?.discard().catch(() => undefined);
    throw asTargetError(options.out, error);
  } finally {
    closeRun();
    await downloads.close();
  }
  report.finish();
  return { report, relists: lister.relists, changed: recorder.changed, out: options.out, ...(snapshot ? { snapshot } : {}) };
}

/** The lines of `intact` that name no file of `listing`. */
function unlistedLines(intact: ReadonlyMap<string, ManifestLine>, listing: readonly { key: string }[]): ManifestLine[] {
  if (intact.size === 0) return [];
  const listed = new Set(listing.map((file) => file.key));
  return [...intact].filter(([key]) => !listed.has(key)).map(([, line]) => line);
}
