/**
 * `wds-files fleet worker` (DESIGN.md section 14): one of any number of processes that run the
 * companies' pipelines through pg-boss. Each worker
 *
 * - makes or migrates pg-boss's schema and the fleet's tables, and puts each cron pattern of the
 *   companies file in pg-boss's cron (in the service's time zone);
 * - at start, catches up once (or skips, `catch_up: skip`) the times each pipeline missed while
 *   no worker ran, as `wds-files schedule` does; a pipeline it never saw scheduled has missed nothing;
 * - takes up to `concurrency` runs from the runs queue, extends each run's lease while it goes on,
 *   waits out the service's nightly window as the scheduler does, runs the pipeline with the
 *   company's credentials, and completes the job (ok, partial) or fails it (pg-boss retries it
 *   with backoff);
 * - keeps the history of runs in the database, and serves health and metrics from it.
 *
 * On SIGTERM it takes nothing new; the runs under way end cleanly (section 8) and their jobs are
 * failed, so another worker continues them after the retry delay, from what they left.
 */
import { hostname } from 'node:os';
import { Cron } from 'croner';
import { Agent } from 'undici';
import type PgBoss from 'pg-boss';
import { redact } from '../util/redact.js';
import { runPipelineFile, type PipelineRunSummary } from '../pipeline-files/run.js';
import type { LoadedPipeline } from '../pipeline-files/load.js';
import type { ClientDispatchers } from '../pipeline-files/connection.js';
import { runnerOf } from '../schedule/pipelines.js';
import { dueTimes, lineOf, missedCount, notifyAfter, runGuarded } from '../schedule/scheduler.js';
import { localClock, probeService, waitForService } from '../schedule/service-time.js';
import type { StatusHealth } from '../schedule/status-server.js';
import type { RunOutcome } from '../schedule/types.js';
import type { FleetCompany } from './companies.js';
import { FleetDatabase, migrate, untilAborted, type Executor } from './database.js';
import { FleetMetrics } from './metrics.js';
import { databaseWindowStores } from './limit-windows.js';
import { databaseJournals } from './journal-store.js';
import { eventsDuringRun } from './webhook-events.js';
import type { WebhookEvent } from '../spec/events.js';
import type { JournalStores } from '../stages/import/journal/store.js';
import type { WindowStores } from '../client/window-store.js';
import { cronQueueOf, enqueueRun, extendLease, isCronQueue, runKey, RUNS_QUEUE, startBoss, type FleetTiming, type RunJobData } from './queue.js';

export interface FleetWorkerOptions {
  database: string;
  companies: FleetCompany[];
  concurrency: number;
  /** IANA zone of the service's local time: cron times and the nightly window are read in it. */
  timeZone: string;
  timing: FleetTiming;
  signal: AbortSignal;
  log: (line: string) => void;
  /** How the service is asked its time. */
  probe?: typeof probeService;
}

interface Scheduled {
  company: FleetCompany;
  pipeline: LoadedPipeline;
  cron: string;
}

/** How long a run's end is kept trying to reach the database before its job is left to expire and be retried. */
const SETTLE_FOR_MS = 10 * 60_000;
const HEALTH_EVERY_MS = 10_000;
/** Longer than a lock takes to go stale (DESIGN.md section 8: 2 minutes without a heartbeat). */
const LOCK_WAIT_MS = 3 * 60_000;

export class FleetWorker {
  readonly metrics = new FleetMetrics();
  readonly id = `${hostname()}:${process.pid}`;
  private readonly db: FleetDatabase;
  private boss: PgBoss | null = null;
  private readonly running = new Set<Promise<void>>();
  private wake: (() => void) | null = null;
  private failing: StatusHealth['failing'] = [];
  private healthTimer: NodeJS.Timeout | null = null;
  private loop: Promise<void> | null = null;
  private readonly byName: Map<string, FleetCompany>;
  /** Each company's limit windows, shared with the other workers and every CLI run given the database. */
  private readonly windows: WindowStores;
  /** Import journals in the database, so that a run taken over continues from what the dead one sent. */
  private readonly journals: JournalStores;
  /**
   * The service's connections, shared by the worker's runs: each run's client opened its own
   * (about 18 a run of 20 files, each a TLS handshake against the real service), used once.
   * Updates keep opening a connection each, as a client's own pool does.
   */
  private readonly dispatchers: ClientDispatchers;

  constructor(private readonly options: FleetWorkerOptions) {
    this.db = new FleetDatabase(options.database, (line) => {
      options.log(line);
      this.metrics.setDatabaseUp(this.db.up);
    }, { max: Math.max(4, options.concurrency + 3) });
    this.windows = databaseWindowStores(this.db);
    this.journals = databaseJournals(this.db);
    // As many connections to a host as the runs' own clients had together (8 each).
    const connections = 8 * options.concurrency;
    this.dispatchers = { reads: new Agent({ connections, keepAliveTimeout: 10_000 }), updates: new Agent({ connections, pipelining: 0 }) };
    this.byName = new Map(options.companies.map((company) => [company.name, company]));
    for (const company of options.companies) for (const name of company.pipelines.keys()) this.metrics.declare(company.name, name);
    this.metrics.setDatabaseUp(true);
  }

  /** `/healthz`: the companies whose pipeline's last completed run, by any worker, failed. */
  health(): StatusHealth {
    return { ok: this.failing.length === 0, failing: this.failing };
  }

  /**
   * Starts taking runs. A database out of reach is waited for (the database logs it once, naming
   * host:port/db): a worker started before its database, as after a reboot of both, is not a
   * failure. Answers false when the stop signal came first; nothing was started then.
   */
  async start(): Promise<boolean> {
    const { log, timing, signal } = this.options;
    try {
      await this.db.untilReached(() => untilAborted(migrate(this.db), signal), { everyMs: 2000, signal });
    } catch (error) {
      if (signal.aborted) return false;
      throw error;
    }
    this.boss = await startBoss(this.db, timing, 'worker', (error) => {
      // Outages are told by the database once; anything else pg-boss reports is worth a line.
      if (this.db.up) log(redact(`pg-boss: ${error.message}`));
    });
    await this.refreshHealth();
    this.healthTimer = setInterval(() => void this.refreshHealth(), HEALTH_EVERY_MS);
    const scheduled = this.scheduled();
    for (const company of this.options.companies) {
      for (const pipeline of company.pipelines.values()) await this.register({ company, pipeline, cron: pipeline.schedule?.cron ?? null });
    }
    await this.startCron(scheduled);
    this.loop = this.takeRuns();
    log(`worker ${this.id}: ${this.options.companies.length} compan${this.options.companies.length === 1 ? 'y' : 'ies'}, ${scheduled.length} scheduled pipeline${scheduled.length === 1 ? '' : 's'}, up to ${this.options.concurrency} run${this.options.concurrency === 1 ? '' : 's'} at a time; SIGTERM lets the runs under way end`);
    return true;
  }

  /** Resolves once the stop signal came and every run under way has ended and been recorded. */
  async finished(): Promise<void> {
    const { signal } = this.options;
    if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    this.wake?.();
    await this.loop;
    while (this.running.size) await Promise.all(this.running);
    if (this.healthTimer) clearInterval(this.healthTimer);
    await this.boss?.stop({ graceful: false, close: false, wait: true }).catch(() => undefined);
    await this.db.close().catch(() => undefined);
    await Promise.all([this.dispatchers.reads.close(), this.dispatchers.updates.close()]).catch(() => undefined);
  }

  private scheduled(): Scheduled[] {
    return this.options.companies.flatMap((company) => [...company.pipelines.values()]
      .filter((pipeline) => pipeline.schedule)
      .map((pipeline) => ({ company, pipeline, cron: pipeline.schedule!.cron })));
  }

  /**
   * Makes the pipeline and its schedule known to the fleet (`fleet status`, `fleet run`), and catches
   * up what it missed while no worker ran. A pipeline first seen now, or whose cron changed, starts
   * from now: it missed nothing.
   */
  private async register({ company, pipeline, cron }: Omit<Scheduled, 'cron'> & { cron: string | null }): Promise<void> {
    const { timeZone, log } = this.options;
    const key = runKey(company.name, pipeline.name);
    const catchUp = pipeline.schedule?.catch_up ?? null;
    await this.db.transaction(async (tx) => {
      const { rows } = await tx.executeSql('SELECT cron, time_zone, handled_until FROM wds_fleet.pipelines WHERE company = $1 AND pipeline = $2 FOR UPDATE', [company.name, pipeline.name]);
      const row = rows[0] as { cron: string | null; time_zone: string; handled_until: Date } | undefined;
      if (!row || !cron || row.cron !== cron || row.time_zone !== timeZone) {
        await tx.executeSql(
          `INSERT INTO wds_fleet.pipelines (company, pipeline, cron, time_zone, catch_up, handled_until) VALUES ($1, $2, $3, $4, $5, now())
           ON CONFLICT (company, pipeline) DO UPDATE SET cron = $3, time_zone = $4, catch_up = $5, handled_until = now(), updated_at = now()`,
          [company.name, pipeline.name, cron, timeZone, catchUp],
        );
        return;
      }
      const { count, last } = dueTimes(new Cron(cron, { timezone: timeZone, paused: true }), row.handled_until, new Date());
      if (!last) return;
      const what = `${missedCount(count)} due since ${row.handled_until.toISOString()} while no worker took them (last at ${last.toISOString()})`;
      await tx.executeSql('UPDATE wds_fleet.pipelines SET handled_until = $3, catch_up = $4, updated_at = now() WHERE company = $1 AND pipeline = $2', [company.name, pipeline.name, last, catchUp]);
      if (catchUp === 'skip') {
        log(`${key}: ${what}; skipped (catch_up: skip)`);
        return;
      }
      log(`${key}: ${what}; catching up once now`);
      await this.enqueue({ company: company.name, pipeline: pipeline.name, trigger: 'catch-up', due_at: last.toISOString() }, tx);
    });
  }

  /** One pg-boss cron per pattern; its job starts the runs due then. Patterns no longer in the file are taken out of pg-boss's cron. */
  private async startCron(scheduled: Scheduled[]): Promise<void> {
    const boss = this.boss!;
    const { timeZone, log } = this.options;
    const byQueue = new Map<string, Scheduled[]>();
    for (const entry of scheduled) {
      const queue = cronQueueOf(entry.cron, timeZone);
      byQueue.set(queue, [...(byQueue.get(queue) ?? []), entry]);
    }
    for (const old of await boss.getSchedules()) {
      if (isCronQueue(old.name) && !byQueue.has(old.name)) await boss.unschedule(old.name);
    }
    for (const [queue, entries] of byQueue) {
      await boss.createQueue(queue, { name: queue, policy: 'short' });
      await boss.schedule(queue, entries[0]!.cron, { cron: entries[0]!.cron }, { tz: timeZone });
      await boss.work(queue, async () => {
        for (const entry of entries) {
          await this.due(entry).catch((error: Error) => log(redact(`${runKey(entry.company.name, entry.pipeline.name)}: cannot queue its run: ${error.message}`)));
        }
      });
      const next = new Cron(entries[0]!.cron, { timezone: timeZone, paused: true }).nextRun();
      log(`cron "${entries[0]!.cron}" (${timeZone}): ${entries.map((e) => runKey(e.company.name, e.pipeline.name)).join(', ')}; next ${next ? `${localClock(next.getTime(), timeZone).text} service time` : 'never'}`);
    }
  }

  /** A cron time came: the pipeline's run is queued, unless another worker already did for this time. */
  private async due({ company, pipeline, cron }: Scheduled): Promise<void> {
    const { timeZone } = this.options;
    await this.db.transaction(async (tx) => {
      const { rows } = await tx.executeSql('SELECT handled_until FROM wds_fleet.pipelines WHERE company = $1 AND pipeline = $2 FOR UPDATE', [company.name, pipeline.name]);
      const row = rows[0] as { handled_until: Date } | undefined;
      if (!row) return;
      const { last } = dueTimes(new Cron(cron, { timezone: timeZone, paused: true }), row.handled_until, new Date());
      if (!last) return;
      await tx.executeSql('UPDATE wds_fleet.pipelines SET handled_until = $3, updated_at = now() WHERE company = $1 AND pipeline = $2', [company.name, pipeline.name, last]);
      await this.enqueue({ company: company.name, pipeline: pipeline.name, trigger: 'schedule', due_at: last.toISOString() }, tx);
    });
  }

  private async enqueue(data: RunJobData, tx: Executor): Promise<void> {
    const key = runKey(data.company, data.pipeline);
    const result = await enqueueRun(this.db, this.boss!, data, tx);
    if ('queued' in result) {
      this.options.log(`${key}: queued (${data.trigger}${data.due_at ? `, due at ${data.due_at}` : ''})`);
      return;
    }
    this.metrics.skip(data.company, data.pipeline);
    const since = result.live.started_on ?? result.live.created_on;
    this.options.log(`${key}: due at ${data.due_at ?? 'now'} while its run ${result.live.state === 'active' ? 'started' : 'queued'} ${new Date(since).toISOString()} is ${result.live.state === 'active' ? 'still going' : 'waiting'}; skipped (one run at a time)`);
  }

  /** Takes runs from the queue while there is room, until the stop signal. */
  private async takeRuns(): Promise<void> {
    const { signal, concurrency, timing } = this.options;
    while (!signal.aborted) {
      const free = concurrency - this.running.size;
      if (free > 0) {
        // pg-boss's fetch answers [] while the database is down; the database says so once.
        const jobs = await this.boss!.fetch<RunJobData>(RUNS_QUEUE, { batchSize: free, includeMetadata: true });
        if (signal.aborted) {
          // Taken just as the stop came: given back at once for another worker.
          for (const job of jobs) await this.boss!.fail(RUNS_QUEUE, job.id, { error: 'the worker was stopping' }).catch(() => undefined);
          break;
        }
        for (const job of jobs) {
          const run = this.runJob(job).catch((error: Error) => this.options.log(redact(`${runKey(job.data.company, job.data.pipeline)}: ${error.message}`)));
          const tracked: Promise<void> = run.finally(() => {
            this.running.delete(tracked);
            this.wake?.();
          });
          this.running.add(tracked);
        }
        if (jobs.length && this.running.size < concurrency) continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timing.pollMs);
        // Removed at each wake-up: a listener left per poll grows the signal's list for the worker's
        // whole life (Node warned past 10).
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
      this.wake = null;
    }
  }

  private async runJob(job: PgBoss.JobWithMetadata<RunJobData>): Promise<void> {
    const { log, timing, signal } = this.options;
    const { data } = job;
    const key = runKey(data.company, data.pipeline);
    const company = this.byName.get(data.company);
    const pipeline = company?.pipelines.get(data.pipeline);
    if (!company || !pipeline) {
      const why = `this worker's companies file has no ${company ? `pipeline "${data.pipeline}" for company ${data.company}` : `company "${data.company}"`}; every worker should read the same companies file`;
      log(`${key}: not run: ${why}`);
      await this.boss!.fail(RUNS_QUEUE, job.id, { error: why });
      return;
    }
    const attempt = job.retryCount;
    const history = await this.startHistory(job, attempt).catch(() => null);
    const historyId = history?.id ?? null;
    if (attempt > 0) log(`${key}: attempt ${attempt + 1} of job ${job.id}${history?.takenOver ? `, taken over from ${history.takenOver}, which stopped answering` : ''}`);
    const lost = new AbortController();
    const runSignal = AbortSignal.any([signal, lost.signal]);
    const heartbeat = setInterval(() => {
      extendLease(this.db, job.id, attempt, timing.leaseSeconds).then((ours) => {
        if (ours || lost.signal.aborted) return;
        log(`${key}: its lease lapsed and pg-boss gave the run to another worker; stopping this one`);
        lost.abort('SIGTERM');
      }, () => undefined);
    }, timing.heartbeatMs);
    this.metrics.setRunning(company.name, pipeline.name, true);
    let outcome: RunOutcome;
    const command = `wds-files fleet worker ${this.id} (${key})`;
    // pg-boss lets no other fleet run of this key start, so a lock on the target is a dead worker's
    // (stale after 2 minutes when it was on another machine) or a person's `wds-files run`: waited for.
    const runner = { ...runnerOf(pipeline, command, { log }), name: key, run: ({ signal: stop, log: say }: { signal: AbortSignal; log: (line: string) => void }) => runPipelineFile(pipeline, { signal: stop, log: say, command, waitLockMs: LOCK_WAIT_MS, windowStores: this.windows, journals: this.journals, dispatchers: this.dispatchers }) };
    try {
      const waited = await waitForService(company.baseUrl, { timeZone: this.options.timeZone, signal: runSignal, probe: this.options.probe, onWait: (message) => log(`${key}: ${message}`) });
      if (runSignal.aborted) {
        const now = new Date().toISOString();
        outcome = { status: 'interrupted', started_at: now, finished_at: now, duration_ms: 0, files: 0, bytes: 0 };
      } else {
        log(`${key}: starting (${data.trigger}${data.due_at ? `, due at ${data.due_at}` : ''}${waited.serviceTime ? `; service time ${waited.serviceTime}` : ''})`);
        outcome = await runGuarded(runner, runSignal, log);
      }
    } finally {
      clearInterval(heartbeat);
      this.metrics.setRunning(company.name, pipeline.name, false);
    }
    const summary = outcome as RunOutcome & Partial<PipelineRunSummary>;
    log(redact(lineOf(key, outcome)));
    this.metrics.record(company.name, pipeline.name, outcome);
    const error = lost.signal.aborted ? 'its lease lapsed (the worker lost the database for longer than the lease); another worker runs it' : outcome.error && redact(outcome.error);
    const settle = (fn: () => Promise<unknown>): Promise<unknown> => {
      const until = Date.now() + SETTLE_FOR_MS;
      return this.db.untilReached(fn, { everyMs: 2000, until: () => Date.now() > until }).catch((caught: Error) => log(redact(`${key}: the run's end was not recorded: ${caught.message}`)));
    };
    if (historyId !== null) {
      await settle(() => this.db.executeSql(
        'UPDATE wds_fleet.runs SET status = $2, finished_at = $3, files = $4, bytes = $5, error = $6, snapshot = $7 WHERE id = $1',
        [historyId, outcome.status, outcome.finished_at, outcome.files, outcome.bytes, error ?? null, summary.snapshot ?? null],
      ));
    }
    if (!lost.signal.aborted) {
      const output = { status: outcome.status, files: outcome.files, bytes: outcome.bytes, ...(summary.snapshot ? { snapshot: summary.snapshot } : {}), ...(error ? { error } : {}) };
      // ok and partial are done (a partial archive's next run fetches what is missing); anything else is retried with backoff.
      const done = outcome.status === 'ok' || outcome.status === 'partial';
      await settle(() => (done ? this.boss!.complete(RUNS_QUEUE, job.id, output) : this.boss!.fail(RUNS_QUEUE, job.id, output)));
      if (!done) log(`${key}: ${outcome.status === 'interrupted' ? 'given back to the queue' : 'failed'}; pg-boss ${attempt < job.retryLimit ? `retries it with backoff (attempt ${attempt + 2} of ${job.retryLimit + 1})` : 'has no retry left: it runs again at its next time'}`);
      // A retry answers the events that came meanwhile; a run that is over leaves them one more run.
      if (pipeline.on && (done || attempt >= job.retryLimit)) await settle(() => this.eventsCame(data, pipeline.on!.events, job.startedOn));
    }
    await notifyAfter(runner, outcome, log);
  }

  /** Events its `on:` names that the webhook receiver stored while the run went on: one more run, as `webhook serve --pipelines` does. */
  private async eventsCame(data: RunJobData, events: readonly WebhookEvent[], startedOn: Date): Promise<void> {
    const count = await eventsDuringRun(this.db, data.company, events, startedOn);
    if (!count) return;
    this.options.log(`${runKey(data.company, data.pipeline)}: ${count} event${count === 1 ? '' : 's'} came during its run`);
    await this.db.transaction((tx) => this.enqueue({ company: data.company, pipeline: data.pipeline, trigger: 'event' }, tx));
  }

  /** The run's row in the history; an earlier attempt of the job still `running` was its dead worker's. */
  private async startHistory(job: PgBoss.JobWithMetadata<RunJobData>, attempt: number): Promise<{ id: number; takenOver: string | null }> {
    const { data } = job;
    const { rows: gone } = await this.db.executeSql(
      `UPDATE wds_fleet.runs SET status = 'lost', finished_at = now(), error = 'its worker stopped answering before the run ended; pg-boss gave the run to another worker'
        WHERE job_id = $1 AND status = 'running' RETURNING worker`,
      [job.id],
    );
    const { rows } = await this.db.executeSql(
      'INSERT INTO wds_fleet.runs (job_id, company, pipeline, trigger, due_at, attempt, worker) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id',
      [job.id, data.company, data.pipeline, data.trigger, data.due_at ?? null, attempt, this.id],
    );
    return { id: Number(rows[0]!.id), takenOver: gone.length ? String(gone[0]!.worker) : null };
  }

  private async refreshHealth(): Promise<void> {
    try {
      const { rows } = await this.db.executeSql(
        `SELECT DISTINCT ON (company, pipeline) company, pipeline, status, finished_at, error FROM wds_fleet.runs
          WHERE status IN ('ok', 'partial', 'failed') ORDER BY company, pipeline, finished_at DESC`,
      );
      this.failing = rows
        .filter((row) => row.status === 'failed' && this.byName.get(String(row.company))?.pipelines.has(String(row.pipeline)))
        .map((row) => ({ company: row.company, pipeline: row.pipeline, finished_at: (row.finished_at as Date).toISOString(), ...(row.error ? { error: row.error } : {}) }));
    } catch {
      // The database tells its outage; health keeps what it last knew.
    }
    this.metrics.setDatabaseUp(this.db.up);
  }
}
