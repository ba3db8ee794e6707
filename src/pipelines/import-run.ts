/**
 * What the photo and the attachment import share (DESIGN.md sections 2 and 8): their common
 * options and result, and an ImportRun that keeps the run's report, journal and counts, gives the
 * submit stage its journal record and events, notes what was applied, and makes the result. Each
 * import keeps its own chain of stages (photo-import.ts, attachment-import.ts).
 */
import type { WdsClient } from '../client/client.js';
import type { SourceFile } from '../sources/source.js';
import { reportUnreached } from '../stages/import/read.js';
import { countBatches, submitBatches, type BatchOutcome, type RequestRecord, type SubmitOptions, type SubmitStats } from '../stages/import/submit.js';
import { RunReport, interruptedBy, type ItemReport } from '../stages/report.js';
import type { ImportJournal, JournalFile, JournalKind } from '../stages/import/journal/journal.js';
import { noteApplied } from '../stages/import/journal/settle.js';
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
  private named: { entries: number; files: SourceFile[] } = { entries: 0, files: [] };

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
    this.report.trackKeys();
    // An item a file: kept in a temporary file, as an export's are, not for the whole run in memory.
    this.report.keepItemsOnDisk();
  }

  /** The files the read stage named (and how many entries it read). */
  read(named: { entries: number; files: SourceFile[] }): void {
    this.named = named;
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
   * Each outcome goes in the report as `item` makes it; answers what `applied` keeps of each file
   * applied, for {@link noteApplied}: nothing when that has nothing to do (no journal, or a plan),
   * and only that otherwise, as a checked file holds more than the journal needs.
   */
  async submit<K>(
    batches: AsyncIterable<{ lane: L; items: T[] }>, laneOptions: (lane: L) => SubmitOptions<T>,
    routeOf: (lane: L) => ImportRoute, item: (outcome: BatchOutcome<T>, route: ImportRoute) => ItemReport, keep: (item: T) => K,
  ): Promise<K[]> {
    const applied: K[] = [];
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
          if (outcome.outcome === 'ok' && keeping) applied.push(keep(outcome.item));
          this.report.add(item(outcome, route));
        }
        this.tracker.sent(batch.length, batch.reduce((sum, one) => sum + one.size, 0), this.sent.register + this.sent.update);
      },
    }, this.options.signal);
    return applied;
  }

  /** Why a file sent went well: `what` the run did, with the submit stage's `reason` when it gives one. */
  sentReason(route: ImportRoute, what: string, reason?: string): string {
    if (this.how === 'plan') return `a run would send it (${route})`;
    if (this.how === 'dry run') return `dry run: the service would accept it (${route})`;
    return reason ? `${what}, ${reason}` : what;
  }

  /** report: what the listing shows for the files applied, so that a rerun notices a later change by someone else. */
  async noteApplied(kind: JournalKind, files: Omit<JournalFile, 'before'>[], listing: () => Promise<Map<string, string>>): Promise<void> {
    if (!this.journal || files.length === 0 || this.how === 'plan') return;
    try {
      await noteApplied(this.journal, kind, files, await listing());
    } catch {
      // Without it, a rerun takes the files as listed then.
    }
  }

  /** The result; a stopped run's report names the files it did not reach, each under `memberOf` it. */
  result(checkMs: number, memberOf: (file: SourceFile) => string): ImportResult {
    const { report } = this;
    const { signal, client } = this.options;
    if (signal?.aborted) {
      report.interrupted = { signal: interruptedBy(signal), total: this.named.entries };
      reportUnreached(report, this.named.files, memberOf, signal);
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
