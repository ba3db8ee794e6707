/**
 * One run of a pipeline file: the target's lock, the export or import the file describes, the
 * drop folder's moves, the archive's retention, and a summary. An item or service failure never
 * throws: it becomes the summary's status (`partial`, `failed`), so a scheduler can go on.
 */
import { isBucketAddress, type S3Settings } from '../archive/bucket/address.js';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ExportOptions } from '../pipelines/export.js';
import { ImportJournal } from '../stages/import/journal/journal.js';
import { stateFolder } from '../util/xdg.js';
import type { RunReport } from '../stages/report.js';
import type { WdsClient } from '../client/client.js';
import type { SnapshotBuild } from '../archive/build.js';
import { TargetLockedError, type TargetLock } from '../util/target-lock.js';
import { lockFileOfPlace, lockTarget, type LockedPlace } from '../pipelines/target-lock.js';
import { redact } from '../util/redact.js';
import { isWdsError } from '../client/errors.js';
import { GONE_REASON } from '../sources/file-rules.js';
import { SourceMismatchError, sourceOf, type ExportSource } from '../sinks/source.js';
import type { LoadedPipeline } from './load.js';
import type { EmbeddedService } from './connection.js';

/** What a run did: what `run --json` prints, notifications carry and the scheduler counts. */
export interface PipelineRunSummary {
  pipeline: string;
  status: 'ok' | 'partial' | 'failed' | 'interrupted';
  exit_code: number;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  /** Files that went through (downloaded, linked into a snapshot, or sent). */
  files: number;
  bytes: number;
  /** Files by outcome (ok, converted, skipped, invalid, conflict, failed, unknown). */
  counts: Record<string, number>;
  /** Why a run failed as a whole. */
  error?: string;
  /** The failure's stable code: a client error's (`AUTHENTICATION`, `WRONG_BASE_URL`...), else `ERROR`. */
  error_code?: string;
  /** The snapshot an archive run made. */
  snapshot?: string;
  /** Why that snapshot was held back (too many files deleted): `latest` was not moved, and the run is partial. */
  held?: string;
  /** Snapshots the archive's retention removed after the run. */
  removed?: string[];
  /** A drop folder's files moved after the run. */
  moved?: { done: number; refused: number; left: number };
  /** Another run (another process's) held the pipeline's lock, so this one did nothing (status `failed`). */
  busy?: boolean;
}

/** Another run holds the pipeline's lock: this run did nothing, and it is no failure of the pipeline's. */
export class PipelineBusyError extends Error {
  override readonly name = 'PipelineBusyError';
}

export interface RunPipelineOptions {
  /** Stops the run as SIGINT/SIGTERM stop the other commands (reason: the signal's name). */
  signal?: AbortSignal;
  /** Imports send with Dry-Run: 1 and move nothing. */
  dryRun?: boolean;
  log?: (line: string) => void;
  /** With no base URL, run against this (the CLI's embedded emulator, its default); without it, such a file is refused. */
  embedded?: EmbeddedService;
  env?: NodeJS.ProcessEnv;
  /** Shown to other runs that find the lock taken. */
  command?: string;
  /** How long to wait for another run's lock; 0 (the default) refuses at once. */
  waitLockMs?: number;
  /** The client's request lines and warnings. */
  logger?: import('../client/options.js').Logger;
  /**
   * Whether an export's report keeps each file's item (the default); false keeps counts and the
   * first problems only, for a caller that writes no per-file report. Imports keep them always.
   */
  keepItems?: boolean;
  /** Keep the access token between runs (the client's `tokenCache`). Default false. */
  tokenCache?: boolean;
  /** An archive run's snapshot becomes `latest` however many files were deleted (`max_delete` set aside). */
  allowDeletions?: boolean;
  /** Where the company's limit windows are shared with other machines (the fleet's database). Default: the state file. */
  windowStores?: import('../client/window-store.js').WindowStores;
  /** Where imports keep their journal, shared with other machines (the fleet's database). Default: the file under the state folder. */
  journals?: import('../stages/import/journal/store.js').JournalStores;
  /** Connection pools to the service shared with other runs (a fleet worker's). Default: the run's client's own. */
  dispatchers?: import('./connection.js').ClientDispatchers;
}

/** A run's summary, with the per-file report and lines for a person when there is one. */
export interface PipelineRunResult {
  summary: PipelineRunSummary;
  report?: RunReport;
  lines: string[];
}

const EXIT_CODES = { ok: 0, failed: 1, partial: 3 } as const;

/** Runs a pipeline once; see {@link runPipelineOnce} for the report as well. */
export async function runPipelineFile(pipeline: LoadedPipeline, options: RunPipelineOptions = {}): Promise<PipelineRunSummary> {
  // Only the summary is answered: an export's report need not keep its items.
  const { summary, report } = await runPipelineOnce(pipeline, { keepItems: false, ...options });
  // The scheduler runs pipelines for months in one process: the report's temporary file is let go
  // now rather than whenever the garbage collector comes round.
  report?.close();
  return summary;
}

/** The file the run locks: its target folder, zip or archive; for an import, the drop folder or the pipeline's name. */
export function lockFileFor(pipeline: LoadedPipeline): string {
  return lockFileOfPlace(lockedPlace(pipeline));
}

/** What the run locks: its target; for an import, the drop folder, or a file named for the pipeline. */
function lockedPlace(pipeline: LoadedPipeline): LockedPlace {
  const { to, from } = pipeline;
  if ('archive' in to) return { kind: 'archive', path: to.archive };
  if ('folder' in to) return { kind: 'folder', path: to.folder };
  if ('zip' in to) return { kind: 'zip', path: to.zip };
  // Beside the drop folder, not in it: a lock file inside would be read as a photo.
  if ('folder' in from) return { kind: 'file', path: from.folder };
  return { kind: 'file', path: join(stateFolder(), 'pipelines', pipeline.name) };
}

export async function runPipelineOnce(pipeline: LoadedPipeline, options: RunPipelineOptions = {}): Promise<PipelineRunResult> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  let lock: TargetLock | undefined;
  let report: RunReport | undefined;
  const lines: string[] = [];
  const extra: Partial<PipelineRunSummary> = {};
  let error: string | undefined;
  let errorCode = 'ERROR';
  let usage = false;
  let busy = false;
  try {
    // An export's dry run writes nothing, so it needs no lock (and makes no folder for one).
    const writes = !('service' in pipeline.from && (options.dryRun || pipeline.steps.submit.dry_run));
    if (writes) {
      await refuseTarget(pipeline);
      // Before the lock and the snapshot: a run into another company's archive leaves no trace
      // there (the export checks again under the lock).
      await checkSource(pipeline, options);
      lock = await takeLock(pipeline, options, log);
    }
    // The run's log lines name no pipeline: the scheduler puts the name before each, `run` has one.
    if (lock?.tookOver) log(`took over the lock ${lock.file} of an earlier run (${lock.tookOver})`);
    report = await execute(pipeline, options, log, lines, extra, lock ? openSnapshot(pipeline) : undefined, lock);
  } catch (caught) {
    // A run into another company's target is the caller's mistake, as a usage error is: exit 2.
    if (caught instanceof SourceMismatchError) {
      usage = true;
      errorCode = 'USAGE';
    }
    busy = caught instanceof PipelineBusyError;
    error = redact(caught instanceof Error ? `${caught.message}${isWdsError(caught) ? ` [${caught.code}]` : ''}` : String(caught));
    if (isWdsError(caught)) errorCode = caught.code;
  } finally {
    await lock?.release();
  }
  const finished = Date.now();
  // Stopped while waiting for the lock: nothing was done, and that is an interruption, not a failure.
  const stoppedEarly = !report && options.signal?.aborted ? { signal: options.signal.reason === 'SIGTERM' ? 'SIGTERM' as const : 'SIGINT' as const } : null;
  if (stoppedEarly) error = undefined;
  const interrupted = report?.interrupted ?? stoppedEarly;
  const status: PipelineRunSummary['status'] = error ? 'failed' : interrupted ? 'interrupted' : report && (report.problems > 0 || extra.held) ? 'partial' : 'ok';
  const exitCode = status === 'interrupted' ? (interrupted!.signal === 'SIGTERM' ? 143 : 130) : usage ? 2 : EXIT_CODES[status];
  const counts = report ? { ...report.counts } : {};
  const summary: PipelineRunSummary = {
    pipeline: pipeline.name,
    status,
    exit_code: exitCode,
    started_at: new Date(started).toISOString(),
    finished_at: new Date(finished).toISOString(),
    duration_ms: finished - started,
    files: report ? report.counts.ok + report.counts.converted : 0,
    bytes: report?.bytes ?? 0,
    counts,
    ...(error ? { error, error_code: errorCode } : {}),
    ...(busy && error ? { busy: true } : {}),
    ...extra,
  };
  return { summary, report, lines };
}

/**
 * A pipeline's folder, zip or archive inside a snapshot archive (another one, for an archive), or a
 * folder or zip of the user's that is no export, is refused before its lock is made there.
 */
async function refuseTarget(pipeline: LoadedPipeline): Promise<void> {
  const { to } = pipeline;
  const [key, out] = 'archive' in to ? ['archive', to.archive] as const : 'folder' in to ? ['folder', to.folder] as const : 'zip' in to ? ['zip', to.zip] as const : [null, null];
  if (key === null || isBucketAddress(out)) return;
  // A pipeline file has no force: a folder or zip of the user's is never written (src/archive/target-check.ts).
  const { exportTargetProblem } = await import('../archive/target-check.js');
  const problem = await exportTargetProblem(out, { kind: key, shown: `to.${key} ${out}` });
  if (problem) throw new Error(problem);
}

/** Where an export's target would take files from, as far as the settings tell before connecting; null when they do not. */
export async function settingsSource(pipeline: LoadedPipeline, options: { embedded?: EmbeddedService; env?: NodeJS.ProcessEnv }): Promise<ExportSource | null> {
  const env = options.env ?? process.env;
  const baseUrl = pipeline.connection.base_url ?? env.WDS_BASE_URL;
  if (baseUrl) {
    const key = pipeline.connection.consumer_key ?? env.WDS_CONSUMER_KEY;
    return key ? sourceOf(baseUrl, key) : null;
  }
  if (!options.embedded) return null;
  const { consumerKey } = await options.embedded.credentials();
  return sourceOf('the embedded emulator', consumerKey);
}

/**
 * An export into a target that records another company's files is refused before the snapshot
 * opens (the export checks again with its client, for the SDK's callers).
 */
async function checkSource(pipeline: LoadedPipeline, options: RunPipelineOptions): Promise<void> {
  const { from, to } = pipeline;
  if (!('service' in from) || 'service' in to) return;
  const source = await settingsSource(pipeline, options);
  if (!source) return;
  const [kind, out] = 'archive' in to ? ['archive', to.archive] as const : 'folder' in to ? ['folder', to.folder] as const : ['zip', to.zip] as const;
  const { checkTargetSource } = await import('../archive/target-source.js');
  await checkTargetSource(out, kind, source, `to.${kind} ${out}`, 'archive' in to ? to.s3 : undefined);
}

async function takeLock(pipeline: LoadedPipeline, options: RunPipelineOptions, log: (line: string) => void): Promise<TargetLock> {
  const { to } = pipeline;
  if ('archive' in to && isBucketAddress(to.archive)) return takeBucketLock(pipeline, to.archive, to.s3, options, log);
  const lockFile = lockFileFor(pipeline);
  await mkdir(dirname(lockFile), { recursive: true });
  try {
    return await lockTarget(lockedPlace(pipeline), {
      command: options.command ?? `wds-files run ${pipeline.file}`,
      waitMs: options.waitLockMs ?? 0,
      signal: options.signal,
      onWait: (holder) => log(`${lockFile} is held by ${holder ? `pid ${holder.pid} on ${holder.host}` : 'another run'}; waiting for it`),
    });
  } catch (lockError) {
    if (!(lockError instanceof TargetLockedError)) throw lockError;
    const h = lockError.holder;
    throw new PipelineBusyError(`${pipeline.name}: another run holds ${lockError.lockFile}${h ? ` (pid ${h.pid} on ${h.host}: ${h.command}, since ${h.started_at})` : ''}; this run did nothing`);
  }
}

/** The lock of a bucket archive (`locks/archive` in it), refused as a folder's is. */
async function takeBucketLock(pipeline: LoadedPipeline, address: string, s3: S3Settings | undefined, options: RunPipelineOptions, log: (line: string) => void): Promise<TargetLock> {
  const [{ BucketStore }, { lockBucketArchive }] = await Promise.all([import('../archive/bucket/store.js'), import('../archive/bucket/lock.js')]);
  const store = BucketStore.open(address, s3);
  try {
    const lock = await lockBucketArchive(store, {
      command: options.command ?? `wds-files run ${pipeline.file}`,
      waitMs: options.waitLockMs ?? 0,
      onWait: (holder) => log(`${address} is held by ${holder ? `pid ${holder.pid} on ${holder.host}` : 'another run'}; waiting for it`),
    });
    const release = lock.release.bind(lock);
    return Object.assign(lock, { release: () => release().finally(() => store.close()) });
  } catch (lockError) {
    store.close();
    if (!(lockError instanceof TargetLockedError)) throw lockError;
    const h = lockError.holder;
    throw new PipelineBusyError(`${pipeline.name}: another run holds ${lockError.lockFile}${h ? ` (pid ${h.pid} on ${h.host}: ${h.command}, since ${h.started_at})` : ''}; this run did nothing`);
  }
}

/**
 * An archive run's snapshot, opened as soon as the lock is held (the caller holds it): it starts
 * taking the earlier snapshot's files over while the client and the export load, and while the
 * service lists the files, rather than after. Undefined for any other run.
 */
function openSnapshot(pipeline: LoadedPipeline): Promise<SnapshotBuild> | undefined {
  const { from, to } = pipeline;
  if (!('archive' in to) || !('service' in from) || isBucketAddress(to.archive)) return undefined;
  const opening = import('../archive/build.js').then(({ SnapshotBuild }) => SnapshotBuild.open(to.archive, pipeline.name));
  opening.catch(() => undefined); // awaited by the export, or discarded; not an unhandled rejection meanwhile
  return opening;
}

async function execute(
  pipeline: LoadedPipeline, options: RunPipelineOptions, log: (line: string) => void, lines: string[], extra: Partial<PipelineRunSummary>,
  snapshot?: Promise<SnapshotBuild>, lock?: TargetLock,
): Promise<RunReport> {
  // A snapshot opened ahead and never handed to the export (the connection failed) leaves
  // nothing of what it placed ahead.
  let handed = false;
  try {
    return await executeWith(pipeline, options, log, lines, extra, snapshot, () => (handed = true), lock);
  } finally {
    if (!handed) await snapshot?.then((build) => build.discard(), () => undefined);
  }
}

async function executeWith(
  pipeline: LoadedPipeline, options: RunPipelineOptions, log: (line: string) => void, lines: string[], extra: Partial<PipelineRunSummary>,
  snapshot: Promise<SnapshotBuild> | undefined, handOver: () => void, lock: TargetLock | undefined,
): Promise<RunReport> {
  const { from, to, steps } = pipeline;
  const dryRun = options.dryRun || steps.submit.dry_run;
  // The client and the stages load here, after the lock and while a snapshot starts.
  const { connectPipeline } = await import('./connection.js');
  const connection = await connectPipeline(pipeline, {
    env: options.env, embedded: options.embedded, dryRun, log, logger: options.logger, tokenCache: options.tokenCache, windowStores: options.windowStores, dispatchers: options.dispatchers,
  });
  try {
    const { client } = connection;
    if ('service' in from) {
      if ('service' in to) throw new Error('a pipeline from the service goes to an archive, a folder or a zip');
      if (dryRun) return await dryExport(pipeline, client, lines);
      const out = 'archive' in to ? to.archive : 'folder' in to ? to.folder : to.zip;
      if (!isBucketAddress(out)) await mkdir('zip' in to ? dirname(out) : out, { recursive: true });
      const { runExport } = await import('../pipelines/export.js');
      const exportOptions: ExportOptions = {
        client,
        what: from.service,
        out,
        // The run holds the target's lock (takeLock) and checked the target (refuseTarget).
        lock: false,
        held: lock,
        since: steps.list.since,
        concurrency: steps.download.concurrency,
        signal: options.signal,
        keepItems: options.keepItems,
        ...(from.service === 'attachments' ? { sheets: from.sheets, field: from.field } : {}),
        ...('archive' in to ? {
          archive: {
            pipeline: pipeline.name, maxDelete: options.allowDeletions ? '100%' : to.max_delete, ...(snapshot ? { opening: snapshot } : {}),
            ...(to.s3 ? { s3: to.s3 } : {}), ...(to.lock ? { objectLock: to.lock } : {}),
          },
        } : {}),
      };
      handOver();
      const result = await runExport(exportOptions);
      lines.push(`written to ${result.out}`, ...result.report.notes);
      if (result.snapshot) {
        const s = result.snapshot;
        extra.snapshot = s.id;
        lines.push(`snapshot ${s.id}${s.complete ? s.held ? ' (held back)' : '' : ' (incomplete)'}: ${s.counts.files} files, ${s.counts.new} new, ${s.counts.changed} changed, ${s.counts.unchanged} unchanged, ${s.counts.repaired ? `${s.counts.repaired} repaired, ` : ''}${s.counts.deleted} deleted`);
        if (s.held) {
          extra.held = s.held;
          lines.push(`held back: ${s.held}; latest was not moved, and retention leaves the snapshot alone. If the service did lose those files, run again with --allow-deletions (or raise max_delete)`);
        }
        // A snapshot left incomplete still counts as a partial run (exit 3), as its failed files say.
      }
      // Retention after a stopped run would judge by a snapshot that is not there yet.
      if ('archive' in to && pipeline.retention && !result.report.interrupted) {
        const source = sourceOf(client.options.baseUrl, client.options.consumerKey);
        const { remove, busy } = isBucketAddress(to.archive)
          ? await bucketRetention(to.archive, to.s3, pipeline.retention, { dryRun, lock, source })
          : await (await import('../archive/forget.js')).forgetSnapshots(to.archive, pipeline.retention, { dryRun, lock, source });
        if (remove.length) lines.push(`retention ${dryRun ? 'would remove' : 'removed'} ${remove.length} snapshot${remove.length === 1 ? '' : 's'}: ${remove.join(', ')}`);
        if (busy.length) lines.push(`retention kept ${busy.join(', ')}, being read (archive restore); the next run removes ${busy.length === 1 ? 'it' : 'them'}`);
        extra.removed = remove;
      }
      return result.report;
    }
    if (!('service' in to)) throw new Error('a pipeline from a folder, zip or CSV goes to the service');
    const { moveSettled, openPipelineSource } = await import('./move.js');
    const source = await openPipelineSource(from, { make: !dryRun, log });
    // The embedded emulator is a new company each run: it has no journal. A dry run writes none.
    const journal = connection.embedded || dryRun ? undefined : await ImportJournal.of(client.options.consumerKey, options.journals);
    // A lock another run took over stops the sending as a stop signal would (a request sent is
    // followed to its end): the files left are that run's to send.
    const signal = lock && options.signal ? AbortSignal.any([options.signal, lock.signal]) : lock?.signal ?? options.signal;
    let report: RunReport;
    try {
      if (to.service === 'photos') {
        const { runPhotoImport } = await import('../pipelines/photo-import.js');
        const result = await runPhotoImport({
          client, source, mode: to.mode, trimming: steps.submit.trim, normalize: steps.normalize.convert, concurrency: steps.check.concurrency, dryRun, signal, journal,
        });
        report = result.report;
        lines.push(requestLine(result.requests), ...result.report.notes);
      } else {
        const { runAttachmentImport } = await import('../pipelines/attachment-import.js');
        const result = await runAttachmentImport({
          client, source, sheet: to.sheet, field: to.field, mode: to.mode, concurrency: steps.check.concurrency, dryRun, signal, journal,
        });
        report = result.report;
        lines.push(requestLine(result.requests), ...result.report.notes);
      }
    } finally {
      await source.close();
    }
    // Stopped by the lock's loss, the run fails naming the other holder rather than passing for interrupted.
    if (lock?.signal.aborted) throw lock.signal.reason;
    // A file gone since the listing is skipped, not a problem, so no summary line names it: the log does.
    if (report.counts.skipped) for (const item of report.items) if (item.reason === GONE_REASON) log(`${item.path ?? item.file_name}: ${GONE_REASON}`);
    if ('folder' in from && from.move && !dryRun) {
      const moved = await moveSettled(report, from.folder, from.move, log, lock, { waitForMembers: pipeline.on?.events.includes('member_created') ?? false });
      extra.moved = moved;
      lines.push(`moved ${moved.done} to ${from.move.done}, ${moved.refused} to ${from.move.refused}; ${moved.left} left in ${from.folder}`);
    }
    return report;
  } finally {
    await connection.close();
  }
}

/** An export's dry run writes nothing: its report holds no file, and its lines say what a run would do. */
async function dryExport(pipeline: LoadedPipeline, client: WdsClient, lines: string[]): Promise<RunReport> {
  const [{ planLines, planPipeline }, { RunReport }] = await Promise.all([import('./plan.js'), import('../stages/report.js')]);
  const plan = await planPipeline(pipeline, client);
  lines.push('dry run: nothing was written; a run would do this:', ...planLines(plan));
  const report = new RunReport(`${pipeline.name} (dry run)`);
  report.finish();
  return report;
}

const requestLine = (r: { register: number; update: number }): string =>
  `${r.register + r.update} update request${r.register + r.update === 1 ? '' : 's'} (${r.register} register, ${r.update} update)`;

/** A run's retention on a bucket archive (src/archive/bucket/forget.ts): snapshots, then unused objects past the margin. */
async function bucketRetention(address: string, s3: S3Settings | undefined, policy: NonNullable<LoadedPipeline['retention']>, options: { dryRun?: boolean; lock?: TargetLock; source: ExportSource }) {
  const [{ BucketStore }, { forgetBucketSnapshots }] = await Promise.all([import('../archive/bucket/store.js'), import('../archive/bucket/forget.js')]);
  const store = BucketStore.open(address, s3);
  try {
    return await forgetBucketSnapshots(store, policy, options);
  } finally {
    store.close();
  }
}
