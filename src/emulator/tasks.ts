/**
 * Asynchronous tasks (api-v2.md 3, wire-format.md Common): each one goes WAITING, RUNNING, then OK,
 * NG or ERROR. Tasks of a company run one at a time in order of creation (api-v2.md 8: updates are
 * processed in order of start time), on the service clock. A job runs when its task completes, on
 * the data as it is then; it returns the NG messages (none means OK) and changes data only when it
 * returns none. A job that throws ends as ERROR.
 */
import type { Clock } from './clock.js';
import type { TaskStatus } from '../spec/events.js';

export type TaskJob = () => Promise<string[]> | string[];

/** Thrown by a job that the control API's faults made fail (`task_error_rate`): the task ends ERROR, and the emulator logs nothing of it. */
export class InjectedTaskError extends Error {
  override readonly name = 'InjectedTaskError';
  constructor() {
    super('injected by the control API (task_error_rate)');
  }
}

/** A job that ends its task ERROR before it changes anything, when `fails` says so. */
export const failingWhen = (fails: boolean, job: TaskJob): TaskJob => (fails ? () => { throw new InjectedTaskError(); } : job);

export interface TaskTiming {
  /** Service ms a task waits before it runs. */
  waitMs: number;
  /** Service ms a task runs, plus `perItemMs` for each item of its request. */
  runMs: number;
  perItemMs: number;
}

export const DEFAULT_TASK_TIMING: TaskTiming = { waitMs: 100, runMs: 200, perItemMs: 1 };

interface TaskEntry {
  id: number;
  dryRun: boolean;
  durationMs: number;
  createdAt: number;
  startAt?: number;
  doneAt?: number;
  status: TaskStatus;
  messages: string[];
  job?: TaskJob;
}

export interface TaskView {
  id: number;
  status: TaskStatus;
  messages: string[];
}

export class TaskQueue {
  private readonly tasks = new Map<number, TaskEntry>();
  private readonly pending: TaskEntry[] = [];
  private lastDoneAt = 0;
  /** The service clock when the queue last read it. */
  private lastSeen = -Infinity;
  private running: Promise<void> | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly timing: TaskTiming,
    private readonly nextId: () => number,
    private readonly onError: (id: number, error: unknown) => void = () => undefined,
  ) {}

  create(job: TaskJob, options: { items: number; dryRun: boolean }): number {
    const id = this.nextId();
    const entry: TaskEntry = {
      id,
      dryRun: options.dryRun,
      durationMs: this.timing.runMs + this.timing.perItemMs * options.items,
      createdAt: this.now(),
      status: 'WAITING',
      messages: [],
      job,
    };
    this.tasks.set(id, entry);
    this.pending.push(entry);
    this.schedule();
    return id;
  }

  get(id: number): TaskView | undefined {
    const entry = this.tasks.get(id);
    if (!entry) return undefined;
    return { id: entry.id, status: entry.status, messages: [...entry.messages] };
  }

  get size(): number {
    return this.tasks.size;
  }

  /** Times tasks in order and runs every job whose task is due. */
  tick(): Promise<void> {
    this.running ??= this.runDue().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Resolves when every task created so far is final (service clock permitting). */
  async drain(): Promise<void> {
    while (this.pending.length) {
      await this.tick();
      if (this.pending.length) await new Promise((r) => setTimeout(r, 5));
    }
  }

  /**
   * The service clock, with the queue's times moved back by as much as the clock went back since
   * it was last read: time moved back counts as no time at all, so a task keeps the progress it had
   * and neither it nor a task after it waits for the clock to come back to where it was.
   */
  private now(): number {
    const now = this.clock.now();
    const back = this.lastSeen - now;
    if (back > 0) {
      for (const entry of this.pending) {
        entry.createdAt -= back;
        if (entry.startAt !== undefined) entry.startAt -= back;
        if (entry.doneAt !== undefined) entry.doneAt -= back;
      }
      this.lastDoneAt -= back;
    }
    this.lastSeen = now;
    return now;
  }

  private schedule(): void {
    let previousDone = this.lastDoneAt;
    for (const entry of this.pending) {
      if (entry.startAt === undefined) {
        entry.startAt = Math.max(entry.createdAt + this.timing.waitMs, previousDone);
        entry.doneAt = entry.startAt + entry.durationMs;
      }
      previousDone = entry.doneAt!;
    }
  }

  private async runDue(): Promise<void> {
    for (;;) {
      const head = this.pending[0];
      if (!head) return;
      const now = this.now();
      for (const entry of this.pending) {
        if (entry.startAt! <= now && entry.status === 'WAITING') entry.status = 'RUNNING';
      }
      if (head.doneAt! > now) return;
      this.pending.shift();
      this.lastDoneAt = head.doneAt!;
      try {
        const messages = await head.job!();
        head.messages = messages;
        head.status = messages.length ? 'NG' : 'OK';
      } catch (error) {
        head.status = 'ERROR';
        head.messages = [`task ${head.id} failed unexpectedly; nothing was changed`];
        if (!(error instanceof InjectedTaskError)) this.onError(head.id, error);
      }
      delete head.job;
    }
  }

  /**
   * Forgets every task. A job already running is let finish first (on the data as it is), so that
   * it cannot change what replaces that data; no other job runs.
   */
  async clear(): Promise<void> {
    this.pending.length = 0;
    await this.running;
    this.tasks.clear();
    this.pending.length = 0;
    this.lastDoneAt = 0;
    this.lastSeen = -Infinity;
  }
}
