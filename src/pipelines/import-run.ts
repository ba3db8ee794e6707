/**
 * What the photo and the attachment import share (DESIGN.md sections 2 and 8): their common
 * options and result, and an ImportRun that keeps the run's report, journal and counts, gives the
 * submit stage its journal record and events, notes what was applied, and makes the result. Each
 * import keeps its own chain of stages (photo-import.ts, attachment-import.ts).
 */
import type { WdsClient } from '../client/client.js';
import type { ImportSource, SourceFile, SourceWant } from '../sources/source.js';
import { reportUnreached, reportUnreachedAgain, type NamedFiles } from '../stages/import/read.js';
import { countBatches, submitBatches, type BatchOutcome, type RequestRecord, type SubmitOptions, type SubmitStats } from '../stages/import/submit.js';
import { RunReport, interruptedBy, type ItemReport } from '../stages/report.js';
import { targetOf, type ImportJournal, type JournalFile, type JournalKind } from '../stages/import/journal/journal.js';
import { noteApplied } from '../stages/import/journal/settle.js';
import { SortedSpill } from '../util/sorted-spill.js';
import { ImportTracker, type ImportProgress } from './import-progress.js';

/** The options both imports take. */
export interface ImportRunOptions {
  /** The client to send with. */
  client: WdsClient;
  /** Send every request with `Dry-Run: 1`: all checks, no change (the submit stage's `dry_run`). Default false. */
  dryRun?: boolean;
  /**
   * Aborted by the CLI on SIGINT or SIGTERM (reason: the signal's name): nothing new is checked or
   * sent, the request in flight and its task are followed to their end, and the run returns with
   * `report.interrupted` set.
   */
  signal?: AbortSignal;
  /**
   * Where each request is written before it is sent: requests an earlier run left open are
   * settled first, and files whose bytes the journal knows applied (to their member, under their
   * name) are skipped. Without one, a lost answer is still resolved from the listing in the run.
   * The CLI opens the company's journal ({@link ImportJournal.open}); a dry run never writes to it.
   * Default: none.
   */
  journal?: ImportJournal;
  /** How far the import is: see {@link ImportProgress}. */
  onProgress?: (progress: ImportProgress) => void;
}

/** What an import did. */
export interface ImportResult {
  /** Each file's outcome and why; `interrupted` when it was stopped. */
  report: RunReport;
  /**
   * Requests sent, by kind; `minimum`, the fewest the files needed under the service's limits;
   * `resubmitted`, files sent again after a task refused others of their request.
   */
  requests: {
    /** Register requests sent (photos of members without one; files added). */
    register: number;
    /** Update requests sent (photos of members with one; files replaced). */
    update: number;
    /** The fewest requests the files needed (100 photos or 1,000 files, and 250 MB, per request). */
    minimum: number;
    /** Files sent again after a task refused others of their request. */
    resubmitted: number;
  };
  /** Time spent waiting for the service's limits, Retry-After and retries, in milliseconds. */
  waitedMs: number;
  /** Wall time of the check stage, from the first file read to the last one checked, in milliseconds (it overlaps the sending). */
  checkMs: number;
  /** From the start of the run to the first request leaving, in milliseconds; null when none was sent. */
  firstRequestMs: number | null;
}

/** What kind of request a batch went as. */
export type ImportRoute = 'register' | 'update';

/** An import as it goes: `T` a file checked and ready to send, `L` the lane its batches are in. */
export class ImportRun<T extends { size: number }, L> {
  readonly report: RunReport;
  /** The journal as this run uses it: a dry run's or a plan's keeps what it learns in memory. */
  readonly journal: ImportJournal | undefined;
  /** A run sends; a dry run sends with `Dry-Run: 1`; a plan (`checkOnly`) counts the requests. */
  readonly how: 'run' | 'dry run' | 'plan';
  readonly tracker: ImportTracker<L>;
  readonly stats: SubmitStats = { requests: 0, resubmitted: 0 };
  private readonly sent = { register: 0, update: 0 };
  private readonly started = Date.now();
  private readonly waitedBefore: number;
  private firstRequestAt: number | undefined;
  /** Every file named, so that a stopped run's report still lists those it did not reach. */
  private named: NamedFiles = { entries: 0, files: [] };
  /** Where the files not kept are read again for that: the source and what was asked of it. */
  private again: { source: ImportSource; want: Omit<SourceWant, 'note'> } | undefined;
  /** The files applied, by journal target, with their sha256: for {@link noteApplied}, on disk. */
  private applied: SortedSpill<string> | undefined;

  /**
   * @param what The report's name: `photos import`, `attachments import`.
   * @param minimumOf The fewest requests a lane needs for its files and body bytes.
   */
  constructor(what: string, readonly options: ImportRunOptions & { checkOnly?: boolean }, dryRun: boolean, minimumOf: (files: number, body: number) => number) {
    this.how = options.checkOnly ? 'plan' : dryRun ? 'dry run' : 'run';
    // A dry run settles and skips by the journal as the real run would, so that it says what that
    // run will do, but keeps what it learns in memory: it writes nothing to the journal.
    this.journal = this.how === 'run' ? options.journal : options.journal?.inMemoryOnly();
    this.report = new RunReport(`${what}${this.how === 'run' ? '' : ` (${this.how})`}`);
    this.waitedBefore = options.client.transport.counters.waitedMs;
    this.tracker = new ImportTracker<L>(minimumOf, options.onProgress);
    // An item a file: kept in a temporary file, as an export's are, not for the whole run in memory.
    this.report.keepItemsOnDisk();
  }

  /**
   * The files the read stage named (and how many entries it read); `again`, when it kept none,
   * where a stopped run reads them again to report those it did not reach.
   */
  read(named: NamedFiles, again?: { source: ImportSource; want: Omit<SourceWant, 'note'> }): void {
    this.named = named;
    this.again = again;
    // The files kept are told from those with an outcome by the report's keys; the others by reading both again.
    if (!again) this.report.trackKeys();
  }

  /** Before the run's first step: the journal read again if an earlier run in this process applied files through it. */
  async begin(): Promise<void> {
    await this.journal?.freshen();
  }

  /** Lets go of the temporary files (safe to call twice). */
  close(): void {
    this.applied?.close();
    this.applied = undefined;
  }

  /** The journal's record of a lane's requests (`route`), each item as `file` says; none without a journal. */
  record(kind: JournalKind, route: ImportRoute, file: (item: T) => JournalFile): RequestRecord<T> | undefined {
    const { journal } = this;
    return journal && {
      sending: (items) => journal.sending(kind, route, items.map(file)),
      task: (id, taskId) => journal.task(id, taskId),
      settled: (id, flags, how) => journal.settled(id, flags, how),
    };
  }

  /**
   * submit: one request per batch, its task followed to the end (for a plan, each batch counted).
   * Each outcome goes in the report as `item` makes it; each file applied is kept on disk as
   * `applied` says, for {@link noteApplied}: only when that has something to do (a journal, not a plan).
   */
  async submit(
    batches: AsyncIterable<{ lane: L; items: T[] }>, laneOptions: (lane: L) => SubmitOptions<T>,
    routeOf: (lane: L) => ImportRoute, item: (outcome: BatchOutcome<T>, route: ImportRoute) => ItemReport,
    kind: JournalKind, applied: (item: T) => Omit<JournalFile, 'before'>,
  ): Promise<void> {
    const keeping = this.journal !== undefined && this.how !== 'plan';
    await (this.how === 'plan' ? countBatches : submitBatches)(this.options.client, batches, laneOptions, {
      leaving: () => {
        this.firstRequestAt ??= Date.now();
        this.tracker.sending();
      },
      ended: (lane, batch, outcomes, requests) => {
        const route = routeOf(lane);
        this.sent[route] += requests;
        for (const outcome of outcomes) {
          if (outcome.outcome === 'ok' && keeping) {
            const file = applied(outcome.item);
            (this.applied ??= new SortedSpill<string>(4096, 16 * 1024)).addNow(targetOf(kind, file), file.sha256);
          }
          this.report.add(item(outcome, route));
        }
        this.tracker.sent(batch.length, batch.reduce((sum, one) => sum + one.size, 0), this.sent.register + this.sent.update);
      },
    }, this.options.signal);
  }

  /** Why a file sent went well: `what` the run did, with the submit stage's `reason` when it gives one. */
  sentReason(route: ImportRoute, what: string, reason?: string): string {
    if (this.how === 'plan') return `a run would send it (${route})`;
    if (this.how === 'dry run') return `dry run: the service would accept it (${route})`;
    return reason ? `${what}, ${reason}` : what;
  }

  /**
   * report: what the listing shows for the files applied, so that a rerun notices a later change
   * by someone else. `listing` hands each listed file's journal target and `updated_at` to `each`.
   */
  async noteApplied(listing: (each: (target: string, updatedAt: string) => void) => Promise<void>): Promise<void> {
    const applied = this.applied;
    if (!this.journal || !applied || this.how === 'plan') return;
    const listed = new SortedSpill<string>(4096, 16 * 1024);
    try {
      await listing((target, updatedAt) => listed.addNow(target, updatedAt));
      await noteApplied(this.journal, applied.sorted(), listed.sorted());
    } catch {
      // Without it, a rerun takes the files as listed then.
    } finally {
      listed.close();
      this.close();
    }
  }

  /** The result; a stopped run's report names the files it did not reach, each under `memberOf` it. */
  async result(checkMs: number, memberOf: (file: SourceFile) => string): Promise<ImportResult> {
    const { report } = this;
    const { signal, client } = this.options;
    if (signal?.aborted) {
      report.interrupted = { signal: interruptedBy(signal), total: this.named.entries };
      if (this.again) await reportUnreachedAgain(report, this.again.source, this.again.want, this.named.entries, memberOf, signal);
      else if (this.named.files.length) reportUnreached(report, this.named.files, memberOf, signal);
    }
    report.finish();
    return {
      report,
      requests: { ...this.sent, minimum: this.tracker.minimum, resubmitted: this.stats.resubmitted },
      waitedMs: client.transport.counters.waitedMs - this.waitedBefore,
      checkMs,
      firstRequestMs: this.firstRequestAt === undefined ? null : this.firstRequestAt - this.started,
    };
  }
}
