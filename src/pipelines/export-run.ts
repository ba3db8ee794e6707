/**
 * One export, once runExport has checked its options and holds its target (DESIGN.md section 12):
 * the run owns the stop signal, the lock's loss and one `dispose`, and goes list → plan → transfer
 * → settle. What differs for a folder, a zip or a snapshot is behind its target
 * (src/stages/export/target.ts) and its sink.
 */
import { setMaxListeners } from 'node:events';
import type { DownloadJob, JobFeed } from '../stages/export/download.js';
import type { ListedFiles, RemoteFile, UrlLister } from '../stages/export/list-urls.js';
import { EarlyDownloads } from '../stages/export/early.js';
import { RunReport, interruptedBy } from '../stages/report.js';
import { openLister, type Listed } from '../stages/export/list.js';
import { planExport, realign, type ExportPlan } from '../stages/export/plan.js';
import { DownloadStage } from '../stages/export/transfer.js';
import { ExportRecorder, asTargetError, onDisk } from '../stages/export/record.js';
import type { ExportTarget } from '../stages/export/target.js';
import type { ExportSink } from '../sinks/sink.js';
import { manifestKey, type ManifestLine } from '../sinks/manifest.js';
import { PathHashes } from '../util/safe-name.js';
import type { ExportSource } from '../sinks/source.js';
import type { SnapshotInfo } from '../archive/build.js';
import { DEFAULT_RETRY, type RetryPolicy } from '../client/retry.js';
import { exportEnded, exportStarted } from '../util/runtime.js';
import { DOWNLOAD_RETRY } from '../util/pacing.js';
import type { TargetLock } from '../util/target-lock.js';
import type { ExportOptions, ExportResult } from './export-options.js';

/** What runExport checked and holds for the run. */
export interface RunSettings {
  /** The report's name: `photos export`, `attachments export`. */
  where: string;
  since: string | undefined;
  concurrency: number;
  /** The target's lock, when the run or its caller holds one. */
  lock: TargetLock | undefined;
  /** The company the files come from, recorded in the manifest. */
  source: ExportSource;
}

/** What a run writes with: the sink and what an earlier run left in it, the recorder, and the downloads waiting for their jobs. */
interface Stage {
  sink: ExportSink;
  /** By key; may be on disk (ExportSink.intactFromEarlierRun). */
  intact: ReadonlyMap<string, ManifestLine>;
  recorder: ExportRecorder;
  downloads: DownloadStage;
  /** The downloads' jobs: those started early, then the plan's, then the end. */
  feed: JobFeed<DownloadJob>;
  downloading: Promise<void>;
}

/** What the plan gives the transfer. */
interface Plan {
  /** Made as the downloads take them (ExportPlan's `jobs`), then those of files a zip could not keep. */
  jobs: Iterable<DownloadJob>;
  link: ExportPlan['link'];
  /** How many lines `link` gives at most (those of files started early are left out). */
  linked: number;
  /** The files listed, for a stopped run's report to name those it did not reach; null when the report keeps no items. */
  named: Iterable<{ key: string; code: string; file_name: string }> | null;
}

/** What the steps leave for the result: a snapshot's info, the files that changed meanwhile, and whether the run wrote nothing. */
interface Outcome {
  snapshot?: SnapshotInfo;
  changed: number;
  abandoned?: boolean;
}

/** How a run ended, for its one `dispose`: what becomes of its target. */
type Ending =
  /** Completed, or paused for a rerun: the sink is ended already. */
  | 'settled'
  /** Before its plan: what was made for it goes (ExportTarget.abandon). */
  | 'abandoned'
  /** A fatal error once its sink was in hand: its temporary files go (ExportTarget.discard). */
  | 'failed'
  /** Its lock was taken over: it stops and removes nothing, since the target is another run's now. */
  | 'let go';

export class ExportRun {
  readonly report: RunReport;
  private readonly signal: AbortSignal;
  private readonly inner = new AbortController();
  private readonly retry: RetryPolicy;
  /** The stage, opening or open; null until the run opens it. */
  private staging: Promise<Stage> | null = null;
  /** The stage once the run writes with it: an error from then on fails the target rather than abandoning it. */
  private stage: Stage | null = null;
  /** Files started while the service listed (a target that opens then); null for a target that waits for the listing. */
  private readonly early: EarlyDownloads | null;
  private relists = (): number => 0;
  /** The listing's temporary files, freed as the run ends. */
  private listing: ListedFiles | null = null;

  constructor(private readonly options: ExportOptions, private readonly settings: RunSettings, private readonly target: ExportTarget<SnapshotInfo>) {
    this.report = new RunReport(settings.where);
    if (options.keepItems === false) this.report.countOnly();
    else {
      this.report.keepItemsOnDisk();
      this.report.trackKeys();
    }
    this.early = target.earlyStart ? new EarlyDownloads() : null;
    // A signal of the run's own, aborted with the caller's (and its reason): every download under
    // way (twice the concurrency, see `pool`) and the sink's copying listen to it, more than the 10
    // listeners past which Node warns of a leak on the caller's signal.
    this.signal = this.inner.signal;
    setMaxListeners(2 * settings.concurrency + 8, this.signal);
    if (options.signal?.aborted) this.onStop();
    else options.signal?.addEventListener('abort', this.onStop, { once: true });
    // A lock another run took over stops the downloads at once; the run then ends by letting go.
    const { lock } = settings;
    if (lock?.signal.aborted) this.onLost();
    else lock?.signal.addEventListener('abort', this.onLost, { once: true });
    this.retry = { ...DEFAULT_RETRY, ...DOWNLOAD_RETRY, ...options.retry };
    exportStarted();
  }

  private readonly onStop = (): void => this.inner.abort(this.options.signal!.reason);
  private readonly onLost = (): void => this.inner.abort(this.settings.lock!.signal.reason);

  /** The lock's loss, once the heartbeat or a check found it; null while it is ours. */
  private lost(): unknown {
    const { lock } = this.settings;
    return lock?.signal.aborted ? lock.signal.reason : null;
  }

  /** Runs the export to its end: completed, stopped (the report says so) or failed (it throws). */
  async run(): Promise<ExportResult> {
    let ending: Ending = 'abandoned';
    let reason: unknown;
    let outcome: Outcome;
    try {
      outcome = await this.steps();
      // Stopped while the service listed, before any file was started: nothing is written.
      ending = outcome.abandoned ? 'abandoned' : 'settled';
      reason = this.options.signal?.reason;
    } catch (error) {
      ending = this.lost() ? 'let go' : this.stage ? 'failed' : 'abandoned';
      reason = ending === 'let go' ? this.lost() : error;
      throw ending === 'failed' ? asTargetError(this.options.out, error) : reason;
    } finally {
      await this.dispose(ending, reason);
    }
    this.report.finish();
    return { report: this.report, relists: this.relists(), changed: outcome.changed, out: this.options.out, ...(outcome.snapshot ? { snapshot: outcome.snapshot } : {}) };
  }

  /** list → plan → transfer → settle; a run stopped while the service lists ends after the first. */
  private async steps(): Promise<Outcome> {
    const listed = await this.list();
    if (listed) this.report.notes.push(...listed.notes);
    if (this.options.signal?.aborted) return this.stoppedWhileListing(listed);
    // Not stopped: the listing came in whole (one that failed threw).
    this.staging ??= this.openStage(listed!.lister);
    const stage = await this.staging;
    this.stage = stage;
    stage.recorder.listed(listed!.files.length);
    const plan = await this.plan(stage, listed!);
    await this.transfer(stage, plan);
    const snapshot = await this.settle(stage, plan);
    return { snapshot, changed: stage.recorder.changed };
  }

  /**
   * Every file with its download URL. A target that opens while the service lists has its stage
   * made as soon as it is open, so that changed files start as their listing comes in; another
   * waits for the listing, so that a run that cannot list touches nothing there. Answers null when
   * the caller's stop cut the listing (the run ends as stopped).
   */
  private async list(): Promise<Listed | null> {
    const { client, what, field } = this.options;
    const sheets = this.options.sheets ?? (this.options.sheet !== undefined ? [this.options.sheet] : undefined);
    const { early } = this;
    try {
      // The run's signal cuts the listing: a stop while the service lists (or while a 429 makes the
      // run wait) ends the run now, not once the answer comes.
      const { lister, notes } = await openLister(client, { what, sheets, field, since: this.settings.since }, this.signal);
      this.relists = () => lister.relists;
      if (early) {
        this.staging = this.openStage(lister).then((stage) => {
          early.ready({ feed: stage.feed, ...this.target.earlyStart!() });
          return stage;
        });
        this.staging.catch(() => undefined); // awaited later; not an unhandled rejection meanwhile
      }
      this.listing = await lister.listToDisk(early ? (files) => early.offer(files) : undefined);
      return { files: this.listing, lister, notes };
    } catch (error) {
      if (this.lost() || !this.options.signal?.aborted) throw error;
      return null;
    }
  }

  /** The sink with what an earlier run left there, the recorder and the downloads, waiting for their jobs. */
  private async openStage(lister: UrlLister): Promise<Stage> {
    const { sink, intact } = await this.target.open(this.settings.source);
    const recorder = new ExportRecorder(sink, this.report, 0, this.options.onProgress);
    const { concurrency } = this.settings;
    const downloads = new DownloadStage({ concurrency, lister, sink, retry: this.retry, signal: this.signal, logger: this.options.client.options.logger, onRetry: () => recorder.retried() });
    const feed = downloads.feed();
    const downloading = downloads.run(feed, (result) => recorder.downloaded(result, lister.relists));
    downloading.catch(() => undefined); // awaited by the run; not an unhandled rejection meanwhile
    return { sink, intact, recorder, downloads, feed, downloading };
  }

  /**
   * Stopped while the service listed. Files started early that landed stay in the target's
   * output, which the next run continues, as after any stop; before any was started, nothing is
   * written.
   */
  private async stoppedWhileListing(listed: Listed | null): Promise<Outcome> {
    // How many files there are is known only when the listing came in whole.
    this.report.interrupted = { signal: interruptedBy(this.options.signal!), ...(listed ? { total: listed.files.length } : {}) };
    const stage = this.early && this.early.started.size > 0 ? await this.staging!.catch(() => null) : null;
    if (!stage) {
      if (this.lost()) throw this.lost();
      return { changed: 0, abandoned: true };
    }
    this.stage = stage;
    stage.feed.end();
    await stage.downloading.catch(() => undefined);
    await stage.downloads.close();
    await this.settings.lock?.assertHeld();
    return { snapshot: await this.target.pause(stage.sink, stage.recorder.progress.failed), changed: 0 };
  }

  /** Each file's path: kept from what an earlier run left intact, linked from a previous snapshot, or downloaded. */
  private async plan(stage: Stage, listed: Listed): Promise<Plan> {
    const { sink, intact, recorder } = stage;
    const { out } = this.options;
    // Files whose record moved (a record before theirs was deleted) keep their earlier lines.
    const earlier = realign(listed.files, intact);
    const previous = this.target.reference();
    const reference = previous ? realign(listed.files, previous) : null;
    if (earlier.changed.length > 0) await onDisk(out, () => sink.relabel?.(earlier.changed) ?? Promise.resolve());
    const { jobs, kept: planned, link, linked, previousListed, intactListed } = planExport(listed.files, earlier.lines, reference?.lines);
    this.target.noteListing?.(previousListed, reference?.movedFrom);
    // What a zip or folder holds that this run lists no more (a member deleted since, a file older
    // than `since`) stays in it: an export adds and refreshes. A snapshot takes it out.
    const unlisted = await this.target.unlisted(unlistedLines(earlier.lines, intactListed, listed.files), sink, this.report.notes);
    // Files a zip's earlier run holds but cannot hand over whole are downloaded again, to the
    // same path; those a stop kept it from reaching are not reported. The kept lines are looked
    // up again as they are gone through (twice), not held.
    const notKept = new Set((await onDisk(out, () => sink.keep(joined(planned, unlisted), this.signal))).map(manifestKey));
    const again: DownloadJob[] = [];
    if (notKept.size > 0) {
      const files = new Map<string, RemoteFile>();
      for (const file of listed.files) if (notKept.has(file.key)) files.set(file.key, file);
      for (const line of planned) {
        const file = notKept.has(manifestKey(line)) ? files.get(manifestKey(line)) : undefined;
        if (file) again.push({ file, path: line.path });
      }
      const dropped = this.signal.aborted ? 0 : unlisted.filter((line) => notKept.has(manifestKey(line))).length;
      if (dropped > 0) this.report.notes.push(`${dropped} file${dropped === 1 ? '' : 's'} the zip held, which the service lists no more, failed their check in it (CRC-32, size or sha256) and ${dropped === 1 ? 'is' : 'are'} left out`);
    }
    // The jobs are made from the listing as the downloads take them, and `pool` lets each go once
    // it is done with it: a run of 200,000 files holds neither every job nor every download URL.
    // A stopped run's report names the files it did not reach; only a report that keeps items needs them.
    const files = listed.files;
    const named = this.report.keepsItems ? mapped(files, ({ key, code, file_name }) => ({ key, code, file_name })) : null;
    recorder.kept(notKept.size === 0 ? planned : filtered(planned, (line) => !notKept.has(manifestKey(line))));
    // A file started early is downloaded, not linked or downloaded again.
    const started = this.early?.started;
    const all = joined(jobs, again);
    if (!started || started.size === 0) return { jobs: all, link, linked, named };
    return { jobs: filtered(all, (job) => !started.has(job.file.key)), link: filtered(link, (line) => !started.has(manifestKey(line))), linked, named };
  }

  /**
   * download → sink (the files started early are downloading already). Unchanged files are linked
   * from the previous snapshot while the others download, once the folders made ahead are done;
   * a file that cannot be linked is downloaded after them.
   */
  private async transfer(stage: Stage, plan: Plan): Promise<void> {
    const { feed, downloading, downloads, recorder } = stage;
    feed.pushFrom(plan.jobs);
    feed.end();
    // The feed holds the jobs now, and lets each go once it is done: the plan keeps none of them
    // (held here to the end of the run, every file and its URL would be).
    plan.jobs = [];
    let linking: Promise<DownloadJob[]> | null = null;
    if (plan.linked > 0) {
      const { link } = plan;
      const listing = this.listing!;
      linking = this.target.link!(link, recorder, this.signal, downloading).then((refused) => {
        // Rare (a damaged earlier snapshot): the files of the lines refused are looked up in the
        // listing only then (each line is under its file's key).
        if (refused.length === 0) return [];
        const wanted = new Map(refused.map((line) => [manifestKey(line), line]));
        const jobs: DownloadJob[] = [];
        for (const file of listing) {
          const line = wanted.get(file.key);
          if (line) jobs.push({ file, path: line.path });
        }
        return jobs;
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
    if (unlinked.length === 0) return;
    // Named before the downloads, which let each job go once done with it.
    const note = this.target.refetched!(unlinked);
    await downloads.run(unlinked, (result) => recorder.downloaded(result, this.relists()));
    this.report.notes.push(note);
  }

  /**
   * The manifest, and the output complete (or left for a rerun to continue), only while the lock
   * is still this run's: another run's output is never completed or renamed over.
   */
  private async settle(stage: Stage, plan: Plan): Promise<SnapshotInfo | undefined> {
    const { sink, recorder } = stage;
    await this.settings.lock?.assertHeld();
    let snapshot: SnapshotInfo | undefined;
    if (this.signal.aborted && recorder.unreached > 0) {
      snapshot = await this.target.pause(sink, recorder.progress.failed);
      const interrupted = { signal: interruptedBy(this.signal), total: recorder.progress.total };
      this.report.interrupted = interrupted;
      const reason = `not downloaded: the run was stopped (${interrupted.signal}) before it reached this file; run it again to fetch it`;
      if (plan.named) this.report.addUnreached(plan.named, reason);
      else this.report.countUnreached(recorder.unreached);
    } else {
      snapshot = await this.target.finish(sink, recorder.progress.failed);
    }
    this.report.notes.push(...this.target.notes());
    return snapshot;
  }

  /**
   * The one way out of a run, whichever way it ended: the downloads stop (those under way are
   * waited for), the target is left as `ending` says, and the run's signal, the lock's listener and
   * the process's memory tuning for downloads (src/util/runtime.ts) end with it.
   */
  private async dispose(ending: Ending, reason?: unknown): Promise<void> {
    try {
      if (ending !== 'settled') await this.stopStage(ending, reason);
      if (ending === 'failed') await this.target.discard().catch(() => undefined);
    } finally {
      exportEnded();
      this.listing?.close();
      this.options.signal?.removeEventListener('abort', this.onStop);
      this.settings.lock?.signal.removeEventListener('abort', this.onLost);
      await this.stage?.downloads.close();
    }
  }

  /** A run that ends unsettled: its downloads stop, then its sink ends as `ending` says, and an abandoned target goes. */
  private async stopStage(ending: Exclude<Ending, 'settled'>, reason: unknown): Promise<void> {
    this.inner.abort(reason);
    const stage = this.stage ?? (await this.staging?.catch(() => null)) ?? null;
    if (stage) {
      stage.feed.end();
      await stage.downloading.catch(() => undefined);
      await stage.downloads.close();
      await (ending === 'let go' ? stage.sink.letGo() : stage.sink.abort()).catch(() => undefined);
    }
    if (ending === 'abandoned') await this.target.abandon(stage !== null);
  }
}

/**
 * The lines of `intact` that name no file of `listing`, of which `intactListed` name one (planExport
 * counted them). The listed keys are kept as 64-bit hashes (a rerun lists every file it kept): a
 * line whose key's hashes are not among them is surely unlisted. Should the count of such lines
 * not be what `intactListed` gives (two keys of the same hashes, which is all but impossible, or a
 * key listed twice), the keys are compared whole.
 */
function unlistedLines(intact: ReadonlyMap<string, ManifestLine>, intactListed: number, listing: Iterable<{ key: string }>): ManifestLine[] {
  if (intact.size === 0) return [];
  const listed = new PathHashes();
  let distinct = true;
  for (const file of listing) distinct = listed.add(file.key) && distinct;
  const unlisted: ManifestLine[] = [];
  for (const [key, line] of intact) if (!listed.has(key)) unlisted.push(line);
  if (distinct && unlisted.length === intact.size - intactListed) return unlisted;
  const keys = new Set<string>();
  for (const file of listing) keys.add(file.key);
  return [...intact].filter(([key]) => !keys.has(key)).map(([, line]) => line);
}

/** `items` with `f` applied to each, as they are gone through. */
function mapped<T, U>(items: Iterable<T>, f: (item: T) => U): Iterable<U> {
  return {
    *[Symbol.iterator]() {
      for (const item of items) yield f(item);
    },
  };
}

/** The items of `items` that `keep` keeps, as they are gone through. */
function filtered<T>(items: Iterable<T>, keep: (item: T) => boolean): Iterable<T> {
  return {
    *[Symbol.iterator]() {
      for (const item of items) if (keep(item)) yield item;
    },
  };
}

/** `first`'s items, then `then`'s. */
function joined<T>(first: Iterable<T>, then: Iterable<T>): Iterable<T> {
  return {
    *[Symbol.iterator]() {
      yield* first;
      yield* then;
    },
  };
}
