/**
 * Pipelines started by member events (`on:` and `debounce:` in a pipeline file; DESIGN.md
 * sections 9 and 15), for `webhook serve --pipelines`. Each run goes as the scheduler's do: the
 * service asked first (its nightly window and 503 are waited out), the pipeline's own run with
 * the target locks of section 8, one log line, the notification.
 *
 * - The first matching event starts a wait of `debounce`; events arriving meanwhile join the run
 *   that follows it, so a burst of registrations costs one run, and no event waits longer than
 *   `debounce` plus the run before it.
 * - One run per pipeline at a time: events during a run queue exactly one more run, which starts
 *   as soon as the run ends (their debounce has passed by then, or the next run takes them).
 * - A run that finds the pipeline's lock held by another process (a `schedule`, a `run`) did
 *   nothing: it is tried again after another `debounce`, since the events it answers are still due.
 * - When `signal` aborts, waits are dropped, nothing new starts, and the runs under way get the
 *   signal and end cleanly; `finished()` resolves once they have.
 */
import type { WebhookEvent } from '../spec/events.js';
import { redact } from '../util/redact.js';
import type { PipelineRunner } from './pipelines.js';
import { lineOf, notifyAfter, runGuarded } from './scheduler.js';
import { probeService, waitForService } from './service-time.js';
import type { RunOutcome } from './types.js';

/** A pipeline and the events that start it. */
export interface EventPipeline {
  runner: PipelineRunner;
  events: readonly WebhookEvent[];
  debounceMs: number;
}

export interface EventRunsOptions {
  signal: AbortSignal;
  /** One line at a time, for people (stderr or the journal). */
  log: (line: string) => void;
  /** IANA zone of the service's local time, for its maintenance window. */
  timeZone: string;
  /** A run starts (after any wait for the service): the "pipelines started" metric. */
  onStart?: (pipeline: string) => void;
  /** A run ended. */
  onRun?: (pipeline: string, outcome: RunOutcome) => void;
  /** How the service is asked its time. */
  probe?: typeof probeService;
}

interface Slot {
  pipeline: EventPipeline;
  /** The debounce under way, if any. */
  timer: NodeJS.Timeout | null;
  running: Promise<void> | null;
  /** Events came during the run: one more run follows it. */
  again: boolean;
}

export class EventRuns {
  private readonly slots: Slot[];

  constructor(pipelines: EventPipeline[], private readonly options: EventRunsOptions) {
    this.slots = pipelines.map((pipeline) => ({ pipeline, timer: null, running: null, again: false }));
    options.signal.addEventListener('abort', () => {
      for (const slot of this.slots) this.clearTimer(slot);
    }, { once: true });
  }

  /** The pipelines' names with the events that start each. */
  get pipelines(): { name: string; events: readonly WebhookEvent[]; debounceMs: number }[] {
    return this.slots.map(({ pipeline }) => ({ name: pipeline.runner.name, events: pipeline.events, debounceMs: pipeline.debounceMs }));
  }

  /** Events just stored in the inbox (delivered or reconciled): each pipeline that names one of them is due. */
  notify(events: readonly { event: WebhookEvent; codes: readonly string[] }[]): void {
    if (this.options.signal.aborted || !events.length) return;
    for (const slot of this.slots) {
      const matching = events.filter((event) => slot.pipeline.events.includes(event.event));
      if (!matching.length) continue;
      const codes = matching.reduce((sum, event) => sum + event.codes.length, 0);
      this.due(slot, `${matching.map((event) => event.event).filter((name, i, all) => all.indexOf(name) === i).join(', ')} (${codes} member${codes === 1 ? '' : 's'})`);
    }
  }

  /** Resolves once the runs under way have ended (call it after `signal` aborts). */
  async finished(): Promise<void> {
    for (const slot of this.slots) this.clearTimer(slot);
    while (this.slots.some((slot) => slot.running)) await Promise.all(this.slots.map((slot) => slot.running));
  }

  private due(slot: Slot, what: string): void {
    const { name } = slot.pipeline.runner;
    if (slot.running) {
      if (!slot.again) this.options.log(`${name}: ${what} during its run; one more run follows it`);
      slot.again = true;
      return;
    }
    if (slot.timer) return;
    this.options.log(`${name}: ${what}; running in ${formatSeconds(slot.pipeline.debounceMs)}`);
    this.wait(slot);
  }

  private wait(slot: Slot): void {
    slot.timer = setTimeout(() => {
      slot.timer = null;
      this.start(slot);
    }, slot.pipeline.debounceMs);
  }

  private start(slot: Slot): void {
    if (this.options.signal.aborted) return;
    slot.again = false;
    slot.running = this.runOnce(slot).finally(() => {
      slot.running = null;
      if (slot.again && !this.options.signal.aborted) this.start(slot);
    });
  }

  private async runOnce(slot: Slot): Promise<void> {
    const { runner } = slot.pipeline;
    const { signal, log } = this.options;
    if (runner.baseUrl) {
      await waitForService(runner.baseUrl, { timeZone: this.options.timeZone, signal, probe: this.options.probe, onWait: (message) => log(`${runner.name}: ${message}`) });
      if (signal.aborted) {
        log(`${runner.name}: not started: the receiver is stopping`);
        return;
      }
    }
    log(`${runner.name}: starting (after member events)`);
    this.options.onStart?.(runner.name);
    const outcome = await runGuarded(runner, signal, log);
    if (outcome.busy) {
      log(redact(`${runner.name}: busy (${outcome.error ?? 'another run holds its lock'}); trying again in ${formatSeconds(slot.pipeline.debounceMs)}`));
      if (!signal.aborted && !slot.again) this.wait(slot);
      return;
    }
    log(redact(lineOf(runner.name, outcome)));
    this.options.onRun?.(runner.name, outcome);
    await notifyAfter(runner, outcome, log);
  }

  private clearTimer(slot: Slot): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
  }
}

const formatSeconds = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`);
