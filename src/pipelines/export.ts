/**
 * The export pipelines (issue 4): list URLs, plan paths (skipping files an earlier run left
 * intact), download with bounded concurrency into a folder or a zip, write the manifest, report.
 */
import { setMaxListeners } from 'node:events';
import type { WdsClient } from '../client/client.js';
import { UrlLister, attachmentTargets, type ListTarget, type RemoteFile } from '../stages/list-urls.js';
import { ConnectionLanes, LargeFilePace, LatencyWindow, SinkError, Slots, allOf, downloadFile, pool, type DownloadJob, type DownloadResult, type StartGate } from '../stages/download.js';
import { RunReport, interruptedBy } from '../stages/report.js';
import { stageOptions } from '../stages/options.js';
import { FolderSink } from '../sinks/folder.js';
import { SnapshotBuild, type SnapshotInfo } from '../sinks/archive.js';
import { TargetError, type ExportSink } from '../sinks/sink.js';
import { MANIFEST_NAME, exportDir, manifestKey, type ManifestLine } from '../sinks/manifest.js';
import { PathAllocator, safeName } from '../util/safe-name.js';
import { extensionOf } from '../spec/extensions.js';
import { DEFAULT_RETRY, type RetryPolicy } from '../client/retry.js';
import { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY, isZipTarget } from './export-defaults.js';

export { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY, isZipTarget };

/**
 * Bodies over 1 MB read at once, whatever the concurrency (`largeBodies` in stages/download.ts).
 * 16, so that at the default 16 connections every large answer is read as it comes instead of
 * waiting open.
 */
export const LARGE_BODY_CONCURRENCY = 16;

/**
 * Downloads at once to a folder while bodies over 1 MB are read (LargeFilePace; the concurrency
 * otherwise): fewer large bodies in memory at once, at no cost in time.
 */
export const LARGE_FILE_CONNECTIONS = 10;

/**
 * Downloads an export starts with, and keeps to while the storage answers quickly or the files are
 * large (LatencyWindow in stages/download.ts); each small file answered slowly lets one more start,
 * up to the concurrency.
 */
export const START_CONNECTIONS = 16;

/** How far an export is, as `onProgress` sees it. */
export interface ExportProgress {
  /** Files listed. */
  total: number;
  /** Files downloaded so far. */
  done: number;
  /** Files an earlier run left intact, not downloaded again. */
  skipped: number;
  /** Files that failed after their retries. */
  failed: number;
  /** Downloads tried again so far (a file may count several times). */
  retries: number;
  /** Bytes downloaded so far. */
  bytes: number;
  /** Listings asked for again because download URLs expired (they are valid 15 minutes). */
  relists: number;
}

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
  /** Attachments: only this file part of `sheet`. Default: every file part of the sheet. */
  field?: number;
  /** Downloads in flight at once. Default 64 for photos, 16 for attachments (`defaultConcurrency`). */
  concurrency?: number;
  /** How each download is retried. Defaults: 8 attempts, backoff from 100 ms up to 4 s, Retry-After waits up to 40 minutes. */
  retry?: Partial<RetryPolicy>;
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
  };
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

function lineOf(file: RemoteFile, path: string, size: number, sha256: string): ManifestLine {
  return {
    kind: file.kind, code: file.code, sheet_id: file.sheet_id, custom_field_id: file.custom_field_id,
    record_index: file.record_index, file_name: file.file_name, path, size, sha256, updated_at: file.updated_at,
  };
}

/**
 * Decides each file's path, and which files an earlier run left intact (nothing to download). For
 * an archive, `previous` holds the previous snapshot's lines: a file unchanged since is linked from
 * there (`link`), a changed one keeps its path.
 */
function plan(listing: RemoteFile[], intact: Map<string, ManifestLine>, previous?: Map<string, ManifestLine>): { jobs: DownloadJob[]; kept: ManifestLine[]; link: { file: RemoteFile; line: ManifestLine }[] } {
  const paths = new PathAllocator();
  for (const line of intact.values()) paths.reserve(line.path);
  const taken = previous ? new Set([...intact.values()].map((line) => line.path)) : undefined;
  for (const line of previous?.values() ?? []) if (!taken!.has(line.path)) paths.reserve(line.path);
  const jobs: DownloadJob[] = [];
  const kept: ManifestLine[] = [];
  const link: { file: RemoteFile; line: ManifestLine }[] = [];
  for (const file of listing) {
    const earlier = intact.get(file.key);
    if (earlier && earlier.updated_at === file.updated_at) {
      kept.push(earlier);
      continue;
    }
    if (earlier) {
      jobs.push({ file, path: earlier.path });
      continue;
    }
    const before = previous?.get(file.key);
    if (before && !taken!.has(before.path)) {
      taken!.add(before.path);
      if (before.updated_at === file.updated_at) link.push({ file, line: before });
      else jobs.push({ file, path: before.path });
      continue;
    }
    const dir = exportDir(file, safeName);
    const name = file.kind === 'photo' ? `${file.code}.${extensionOf(file.file_name) || 'jpg'}` : file.file_name;
    jobs.push({ file, path: paths.allocate(dir, name) });
  }
  return { jobs, kept, link };
}


/**
 * A signal of the run's own, aborted with the caller's (and its reason): every download under way
 * listens to it, more than the 10 listeners past which Node warns of a leak on the caller's signal.
 */
function runSignal(outer: AbortSignal | undefined, listeners: number): { signal: AbortSignal | undefined; dispose: () => void } {
  if (!outer) return { signal: undefined, dispose: () => undefined };
  const inner = new AbortController();
  setMaxListeners(listeners, inner.signal);
  const onAbort = (): void => inner.abort(outer.reason);
  if (outer.aborted) onAbort();
  else outer.addEventListener('abort', onAbort, { once: true });
  return { signal: inner.signal, dispose: () => outer.removeEventListener('abort', onAbort) };
}

/** A sink's error (the disk's) becomes a TargetError naming the export; others stay as they are. */
function asTargetError(out: string, error: unknown): unknown {
  return error instanceof SinkError ? new TargetError(out, error.cause, error.path) : error;
}

/** Runs a step of the sink: whatever it throws is the disk's, and names the export. */
async function onDisk<T>(out: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw error instanceof TargetError ? error : new TargetError(out, error);
  }
}

/**
 * The sink for `out`, with the files an earlier run left intact there; aborted if that check
 * fails. Opened once the listing is in: a run that cannot list touches nothing on disk (an earlier
 * export's manifest, or the temporary files of another run into the same folder).
 */
async function openSink(out: string, zipModule: Promise<typeof import('../sinks/zip.js')> | null): Promise<{ sink: ExportSink; intact: Map<string, ManifestLine> }> {
  const ZipSink = zipModule ? (await zipModule).ZipSink : null;
  const sink = await onDisk<ExportSink>(out, () => (ZipSink ? ZipSink.create(out) : FolderSink.create(out)));
  try {
    return { sink, intact: await onDisk(out, () => sink.intactFromEarlierRun()) };
  } catch (error) {
    await sink.abort().catch(() => undefined);
    throw error;
  }
}

/**
 * Exports photos or attachments into a folder or a zip, with a `manifest.jsonl` listing each
 * file's member, size and sha256. A rerun into the same place downloads only what is missing or
 * changed. Takes a lock on the target, so two runs never write the same one.
 */
export async function runExport(options: ExportOptions): Promise<ExportResult> {
  const { client } = options;
  // The list and download stages' options, through the schemas pipeline files use (stages/options.ts).
  const { since } = stageOptions('list', { since: options.since }, `${options.what} export`);
  const concurrency = stageOptions('download', { concurrency: options.concurrency }, `${options.what} export`).concurrency ?? defaultConcurrency(options.what);
  if (options.archive && (options.since !== undefined || isZipTarget(options.out))) {
    throw new RangeError(`an archive is a folder and each snapshot holds every file: ${options.since !== undefined ? 'since cannot be given with archive' : `${options.out} names a zip`}`);
  }
  const report = new RunReport(`${options.what} export`);
  report.keepItemsOnDisk();
  // archiver and its dependencies are loaded only for a zip (a few MB of memory a folder export
  // does without), and while the service lists the files.
  const zipModule = isZipTarget(options.out) && !options.archive ? import('../sinks/zip.js') : null;
  zipModule?.catch(() => undefined); // awaited in openSink; not an unhandled rejection meanwhile
  // An archive's earlier snapshots are read (only read) while the service lists the files.
  const earlier = options.archive ? SnapshotBuild.readEarlier(options.out) : undefined;
  earlier?.catch(() => undefined); // awaited in SnapshotBuild.open
  const targets: ListTarget[] = options.what === 'photos'
    ? [{ id: 'photos', kind: 'photo' }]
    : await attachmentTargets(client, { sheet: options.sheet, field: options.field });
  if (options.what === 'attachments' && targets.length === 0) {
    report.notes.push('no sheet has a file part');
  }
  const lister = new UrlLister(client, targets, since);
  let listing: RemoteFile[] | null = await lister.listAll();
  if (options.signal?.aborted) {
    // Stopped while the service listed the files: nothing on disk is touched.
    report.interrupted = { signal: interruptedBy(options.signal), total: listing.length };
    report.finish();
    return { report, relists: lister.relists, changed: 0, out: options.out };
  }
  const build = options.archive ? await onDisk(options.out, () => SnapshotBuild.open(options.out, options.archive!.pipeline, new Date(), earlier)) : null;
  const { sink, intact } = await openSink(build ? build.dir : options.out, zipModule);
  // Downloads under way (twice the concurrency, see `pool`) and the sink's copying listen to it.
  const { signal, dispose } = runSignal(options.signal, 2 * concurrency + 8);
  // The token is never sent to storage: downloads go through connections of their own, with no
  // auth at all.
  const lanes = new ConnectionLanes(concurrency, { keepAliveTimeout: 30_000 });
  // A stop cuts the requests under way all at once (see ConnectionLanes.destroy).
  const cutRequests = (): void => void lanes.destroy();
  signal?.addEventListener('abort', cutRequests, { once: true });
  const progress: ExportProgress = { total: listing.length, done: 0, skipped: 0, failed: 0, retries: 0, bytes: 0, relists: 0 };
  let changed = 0;
  let snapshot: SnapshotInfo | undefined;
  /** Files of the listing not reported: the run was stopped before it reached them. */
  let unreached = progress.total;
  try {
    const { jobs, kept: planned, link } = plan(listing, intact, build?.reference());
    build?.noteListing(listing.map((file) => file.key));
    // Files a zip's earlier run holds but cannot hand over whole are downloaded again, to the
    // same path; those a stop kept it from reaching are not reported.
    const notKept = new Set((await onDisk(options.out, () => sink.keep(planned, signal))).map(manifestKey));
    const kept = planned.filter((line) => !notKept.has(manifestKey(line)));
    if (notKept.size > 0) {
      const files = new Map(listing.map((file) => [file.key, file]));
      for (const line of planned) {
        const file = notKept.has(manifestKey(line)) ? files.get(manifestKey(line)) : undefined;
        if (file) jobs.push({ file, path: line.path });
      }
    }
    // From here only the jobs hold the files, and `pool` lets each go once it is done with it: a
    // run of 20,000 files does not keep every download URL to its end.
    listing = null;
    unreached -= kept.length;
    for (const line of kept) {
      report.add({ key: manifestKey(line), code: line.code, file_name: line.file_name, outcome: 'skipped', reason: 'already exported: size and sha256 match the manifest', path: line.path, size: line.size, sha256: line.sha256 });
      progress.skipped += 1;
    }
    options.onProgress?.({ ...progress });
    // An archive links its unchanged files while the others download; a file it cannot link is
    // downloaded after them.
    let linking: Promise<DownloadJob[]> | null = null;
    if (build && link.length > 0) {
      const files = new Map(link.map(({ file }) => [file.key, file]));
      const lines = link.map(({ line }) => line);
      linking = onDisk(build.dir, () => build.linkUnchanged(lines, async (line) => {
        try {
          await sink.record(line);
        } catch (error) {
          throw new SinkError(MANIFEST_NAME, error);
        }
        unreached -= 1;
        report.add({ key: manifestKey(line), code: line.code, file_name: line.file_name, outcome: 'skipped', reason: `unchanged since snapshot ${build.previous}; ${build.copied ? 'copied' : 'hard-linked'} from it`, path: line.path, size: line.size, sha256: line.sha256 });
        progress.skipped += 1;
        options.onProgress?.({ ...progress });
      }, signal)).then((refused) => refused.map((line) => ({ file: files.get(manifestKey(line))!, path: line.path })));
      linking.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    }
    const retry = { ...DEFAULT_RETRY, maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 4_000, ...options.retry };
    const largeBodies = new Slots(Math.min(concurrency, LARGE_BODY_CONCURRENCY));
    // A zip paces the downloads by the files waiting for it; a folder by the large bodies read.
    const pace = sink.starts ? undefined : new LargeFilePace(LARGE_FILE_CONNECTIONS);
    const window = new LatencyWindow(START_CONNECTIONS, concurrency);
    // Request lines for the client's logger: the path alone, since the query of a signed URL is its key.
    const logger = options.client.options.logger;
    const onAnswer = logger && ((url: string, status: number, ms: number): void => logger.debug(`GET ${new URL(url).pathname} ${status} ${Math.round(ms)} ms`));
    const onRetry = (): void => {
      progress.retries += 1;
      options.onProgress?.({ ...progress });
    };
    const download = (job: DownloadJob, release: () => void, lane: number): Promise<DownloadResult> =>
      downloadFile(job, { dispatcher: lanes.lane(lane), lister, sink, retry, signal, onReceived: release, largeBodies, pace, window, onRetry, onAnswer });
    const onResult = async (result: DownloadResult): Promise<void> => {
      const { file, job } = result;
      if (result.outcome === 'stopped') return;
      unreached -= 1;
      if (result.outcome === 'ok') {
        try {
          await sink.record(lineOf(file, job.path, result.size!, result.sha256!));
        } catch (error) {
          throw new SinkError(MANIFEST_NAME, error);
        }
        if (result.changed) changed += 1;
        report.add({
          key: file.key, code: file.code, file_name: file.file_name, outcome: 'ok', path: job.path, size: result.size, sha256: result.sha256,
          ...(result.changed ? { reason: `changed on the service since it was first listed; the version of ${file.updated_at} was downloaded` } : {}),
        });
        progress.done += 1;
        progress.bytes += result.size!;
      } else {
        report.add({ key: file.key, code: file.code, file_name: file.file_name, outcome: result.outcome, reason: result.reason, path: job.path });
        if (result.outcome === 'failed') progress.failed += 1;
        else progress.skipped += 1;
      }
      progress.relists = lister.relists;
      options.onProgress?.({ ...progress });
    };
    const gate = allOf(window, ...[sink.starts, pace].filter((g): g is StartGate => g !== undefined));
    try {
      await pool(jobs, concurrency, download, onResult, gate, signal);
    } finally {
      // A download's fatal error waits for the links under way before the sink is aborted.
      await linking?.catch(() => undefined);
    }
    const unlinked = (await linking) ?? [];
    if (unlinked.length > 0) await pool(unlinked, concurrency, download, onResult, gate, signal);
    if (signal?.aborted && unreached > 0) {
      await onDisk(options.out, () => sink.pause());
      report.interrupted = { signal: interruptedBy(signal), total: progress.total };
      if (build) snapshot = await onDisk(build.dir, () => build.pause(progress.failed));
    } else {
      await onDisk(options.out, () => sink.finish());
      if (build) snapshot = await onDisk(build.dir, () => build.finish(progress.failed));
    }
    if (build?.copied) report.notes.push('this file system has no hard links: unchanged files were copied from the previous snapshot, and take their space again');
    if (build?.resumed) report.notes.push(`continued the snapshot an interrupted run left (${build.resumed}.partial)`);
  } catch (error) {
    await sink.abort().catch(() => undefined);
    throw asTargetError(options.out, error);
  } finally {
    signal?.removeEventListener('abort', cutRequests);
    dispose();
    await lanes.close();
  }
  report.finish();
  return { report, relists: lister.relists, changed, out: options.out, ...(snapshot ? { snapshot } : {}) };
}
