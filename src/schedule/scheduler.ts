/**
 * Starts each pipeline at its cron times (DESIGN.md section 9), one run per pipeline at a time.
 *
 * - A time that comes while the pipeline's previous run is still going (or still waiting for the
 *   service) is skipped and logged, as a systemd timer or borgmatic would: no runs pile up, and
 *   the next time runs as usual.
 * - Before a run starts, the service is asked its time: in its nightly window (01:00-01:30), or
 *   while it answers 503, the run waits for the window to end.
 * - Times missed while the scheduler was down are found from the state file at start and caught
 *   up once, or skipped (`catch_up: skip`). A due time counts as dealt with once its run has
 *   ended: a run stopped by SIGTERM, or a scheduler killed mid-run, is caught up at the next start.
 * - When `signal` aborts, nothing new starts, waits end, and the runs under way get the signal
 *   and end cleanly; `finished()` resolves once they have.
 */
import { Cron } from 'croner';
import { redact } from '../util/redact.js';
import { formatBytes } from '../util/format.js';
import { formatDuration } from '../util/duration.js';
import { ScheduleMetrics } from './metrics.js';
import { localClock, waitForService, probeService } from './service-time.js';
import { ScheduleState, type PipelineState } from './state.js';
import type { RunOutcome, ScheduledJob } from './types.js';

export interface SchedulerOptions {
  /** IANA zone of the service's local time, in which cron times are read. */
  timeZone: string;
  signal: AbortSignal;
  /** One line at a time, for people (stderr or the journal). */
  log: (line: string) => void;
  state?: ScheduleState;
  metrics?: ScheduleMetrics;
  /** Each run's outcome, once it has ended (the command prints it as JSON with --json). */
  onRun?: (job: ScheduledJob, outcome: RunOutcome) => void;
  /** The clock, for deciding what was missed. Default: the real one. */
  now?: () => Date;
  /** How the service is asked its time. */
  probe?: typeof probeService;
}

/** Missed times are counted up to this many; more are "at least" as many. */
const MISSED_COUNT_LIMIT = 1000;

interface Slot {
  job: ScheduledJob;
  cron: Cron;
  state: PipelineState;
  /** The run under way (or waiting for the service), if any. */
  busy: Promise<void> | null;
  busySince: Date | null;
  /** The latest time due while the run under way went on (skipped): dealt with when that run ends. */
  coveredUntil: Date | null;
  /** State writes one after the other. */
  saving: Promise<void>;
  /** No state was saved before this start: nothing can have been missed. */
  fresh: boolean;
}

export interface Health {
  ok: boolean;
  failing: { pipeline: string; file: string; finished_at: string; error?: string }[];
}

export class Scheduler {
  private readonly slots: Slot[] = [];
  private readonly state: ScheduleState;
  readonly metrics: ScheduleMetrics;
  private readonly now: () => Date;
  private loaded = false;

  constructor(private readonly jobs: ScheduledJob[], private readonly options: SchedulerOptions) {
    const names = new Set<string>();
    for (const job of jobs) {
      if (names.has(job.name)) throw new Error(`two pipelines are named "${job.name}"; the name keys each pipeline's lock and state, so it must be unique`);
      names.add(job.name);
    }
    this.state = options.state ?? new ScheduleState();
    this.metrics = options.metrics ?? new ScheduleMetrics();
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Reads each pipeline's state, so that health() answers from it before anything runs (start()
   * does this itself when it was not done).
   */
  async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    for (const job of this.jobs) {
      const saved = await this.state.read(job.name);
      const slot: Slot = {
        job,
        cron: new Cron(job.cron, { timezone: this.options.timeZone, paused: true, catch: true }, () => this.due(slot, slot.cron.currentRun() ?? this.now())),
        state: saved ?? { pipeline: job.name, handled_until: this.now().toISOString() },
        busy: null,
        busySince: null,
        coveredUntil: null,
        saving: Promise.resolve(),
        fresh: false,
      };
      this.slots.push(slot);
      this.metrics.declare(job.name);
      if (saved?.last_success_at) this.metrics.restoreLastSuccess(job.name, saved.last_success_at);
      const next = slot.cron.nextRun();
      const nextText = next ? `${localClock(next.getTime(), this.options.timeZone).text} service time (${next.toISOString()})` : 'never';
      this.options.log(`${job.name}: scheduled "${job.cron}" (${this.options.timeZone}) from ${job.file}; next run ${nextText}`);
      slot.fresh = !saved;
    }
  }

  /** Reads each pipeline's state (unless load() did), catches up missed runs, and starts the timers. */
  async start(): Promise<void> {
    await this.load();
    for (const slot of this.slots) {
      if (slot.fresh) this.save(slot);
      else this.catchUp(slot);
    }
    if (this.options.signal.aborted) return;
    this.options.signal.addEventListener('abort', () => this.stopTimers(), { once: true });
    for (const slot of this.slots) slot.cron.resume();
  }

  /** Resolves when the scheduler has been told to stop and every run under way has ended. */
  async finished(): Promise<void> {
    if (!this.options.signal.aborted) {
      await new Promise<void>((resolve) => this.options.signal.addEventListener('abort', () => resolve(), { once: true }));
    }
    this.stopTimers();
    await Promise.all(this.slots.map((slot) => slot.busy));
    await Promise.all(this.slots.map((slot) => slot.saving));
  }

  /**
   * Healthy unless some pipeline's last completed run failed (also a run before this start, from
   * the state). A run cut short by a stop (a deploy, a reboot) neither clears nor makes a failure:
   * it says nothing of the pipeline, and its time is run again at the next start.
   */
  health(): Health {
    const failing = this.slots.flatMap((slot) => {
      const last = slot.state.last_completed_run;
      if (last?.status !== 'failed') return [];
      return [{ pipeline: slot.job.name, file: slot.job.file, finished_at: last.finished_at, ...(last.error ? { error: last.error } : {}) }];
    });
    return { ok: failing.length === 0, failing };
  }

  private stopTimers(): void {
    for (const slot of this.slots) slot.cron.stop();
  }

  private catchUp(slot: Slot): void {
    const since = new Date(slot.state.handled_until);
    const now = this.now();
    const { count: missed, last } = dueTimes(slot.cron, since, now);
    if (!last) return;
    const count = missedCount(missed);
    const cut = slot.state.last_run?.status === 'interrupted' ? `; the run started ${slot.state.last_run.started_at} was stopped before its end` : '';
    const what = `${count} due since ${since.toISOString()} while the scheduler was not running (last at ${last.toISOString()}${cut})`;
    if (slot.job.catchUp === 'skip') {
      this.options.log(`${slot.job.name}: ${what}; skipped (catch_up: skip)`);
      this.metrics.skip(slot.job.name, 'missed', missed);
      slot.state.handled_until = now.toISOString();
      this.save(slot);
      return;
    }
    this.options.log(`${slot.job.name}: ${what}; catching up once now`);
    if (missed > 1) this.metrics.skip(slot.job.name, 'missed', missed - 1);
    this.due(slot, now);
  }

  private due(slot: Slot, at: Date): void {
    if (this.options.signal.aborted) return;
    if (slot.busy) {
      this.options.log(`${slot.job.name}: due at ${at.toISOString()} while the run started ${slot.busySince!.toISOString()} is still going; skipped (one run at a time)`);
      this.metrics.skip(slot.job.name, 'busy');
      slot.coveredUntil = at;
      return;
    }
    slot.busySince = this.now();
    slot.busy = this.runOnce(slot, at).finally(() => {
      slot.busy = null;
      slot.busySince = null;
      this.metrics.setRunning(slot.job.name, false);
    });
  }

  private async runOnce(slot: Slot, dueAt: Date): Promise<void> {
    const { job } = slot;
    const { signal, log } = this.options;
    this.metrics.setRunning(job.name, true);
    if (job.baseUrl) {
      const waited = await waitForService(job.baseUrl, { timeZone: this.options.timeZone, signal, probe: this.options.probe, onWait: (message) => log(`${job.name}: ${message}`) });
      if (signal.aborted) {
        log(`${job.name}: not started (due at ${dueAt.toISOString()}): the scheduler is stopping`);
        return;
      }
      log(`${job.name}: starting (due at ${dueAt.toISOString()}${waited.serviceTime ? `; service time ${waited.serviceTime}` : ''}${waited.waitedMs >= 1000 ? `; waited ${formatDuration(waited.waitedMs)} for the service` : ''})`);
    } else {
      log(`${job.name}: starting (due at ${dueAt.toISOString()})`);
    }
    const outcome = await this.runJob(job);
    if (outcome.busy) {
      // Another process runs this pipeline now: the time is dealt with, and nothing failed.
      const why = outcome.error?.startsWith(`${job.name}: `) ? outcome.error.slice(job.name.length + 2) : outcome.error ?? 'another run holds its lock';
      log(redact(`${job.name}: skipped (busy): ${why}`));
      this.metrics.skip(job.name, 'busy');
      this.handled(slot, slot.coveredUntil && slot.coveredUntil > dueAt ? slot.coveredUntil : dueAt);
      slot.coveredUntil = null;
      this.save(slot);
      return;
    }
    log(redact(lineOf(job.name, outcome)));
    this.metrics.record(job.name, outcome);
    slot.state.last_run = {
      status: outcome.status, started_at: outcome.started_at, finished_at: outcome.finished_at, duration_ms: outcome.duration_ms,
      files: outcome.files, bytes: outcome.bytes, ...(outcome.error ? { error: redact(outcome.error) } : {}),
    };
    if (outcome.status !== 'interrupted') slot.state.last_completed_run = slot.state.last_run;
    if (outcome.status === 'ok' || outcome.status === 'partial') slot.state.last_success_at = outcome.finished_at;
    // A run the scheduler's stop cut short has not dealt with its time: the next start runs it again.
    if (outcome.status !== 'interrupted') this.handled(slot, slot.coveredUntil && slot.coveredUntil > dueAt ? slot.coveredUntil : dueAt);
    slot.coveredUntil = null;
    this.save(slot);
    this.options.onRun?.(job, outcome);
    await notifyAfter(job, outcome, log);
  }

  private runJob(job: ScheduledJob): Promise<RunOutcome> {
    return runGuarded(job, this.options.signal, this.options.log);
  }

  /** Every due time up to `at` has been dealt with (handled_until never goes back). */
  private handled(slot: Slot, at: Date): void {
    if (at.getTime() > Date.parse(slot.state.handled_until)) slot.state.handled_until = at.toISOString();
  }

  private save(slot: Slot): void {
    const snapshot = structuredClone(slot.state);
    slot.saving = slot.saving.then(() => this.state.write(snapshot)).catch((error: Error) => {
      this.options.log(`${slot.job.name}: cannot save the scheduler's state in ${this.state.pathOf(slot.job.name)}: ${error.message}`);
    });
  }
}

/** The due times of `cron` after `since` up to `now`: how many (counted up to a limit), and the last. */
export function dueTimes(cron: Cron, since: Date, now: Date): { count: number; last: Date | null } {
  let count = 0;
  let last: Date | null = null;
  for (let at = cron.nextRun(since); at && at <= now && count < MISSED_COUNT_LIMIT; at = cron.nextRun(at)) {
    count += 1;
    last = at;
  }
  return { count, last };
}

/** "3 runs were", "at least 1000 runs were": missed times as a log line says them. */
export const missedCount = (missed: number): string =>
  missed >= MISSED_COUNT_LIMIT ? `at least ${missed} runs were` : missed === 1 ? '1 run was' : `${missed} runs were`;

/** The one line each run logs. */
export function lineOf(name: string, outcome: RunOutcome): string {
  const files = `${outcome.files} file${outcome.files === 1 ? '' : 's'}`;
  // A pipeline's errors name it, for `run` prints them alone; the line names it once.
  const error = outcome.error?.startsWith(`${name}: `) ? outcome.error.slice(name.length + 2) : outcome.error;
  return `${name}: ${outcome.status}, ${files}, ${formatBytes(outcome.bytes)}, ${formatDuration(outcome.duration_ms)}${error ? `: ${error}` : ''}`;
}

/** What a run needs of a scheduled job or an event-started pipeline. */
interface Runnable {
  name: string;
  run: ScheduledJob['run'];
  afterRun?: ScheduledJob['afterRun'];
}

/** Runs `job` once; a run function that throws is a failed run, not a stopped scheduler or receiver. */
export async function runGuarded(job: Runnable, signal: AbortSignal, log: (line: string) => void): Promise<RunOutcome> {
  const started = new Date();
  try {
    return await job.run({ signal, log: (line) => log(`${job.name}: ${line}`) });
  } catch (error) {
    const finished = new Date();
    return {
      status: 'failed', started_at: started.toISOString(), finished_at: finished.toISOString(), duration_ms: finished.getTime() - started.getTime(),
      files: 0, bytes: 0, error: (error as Error).message,
    };
  }
}

/** Sends the job's notification of `outcome`; one that fails is logged, never the run's failure. */
export async function notifyAfter(job: Runnable, outcome: RunOutcome, log: (line: string) => void): Promise<void> {
  try {
    await job.afterRun?.(outcome);
  } catch (error) {
    log(redact(`${job.name}: the notification was not sent: ${(error as Error).message}`));
  }
}
