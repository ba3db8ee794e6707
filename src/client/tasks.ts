/**
 * Tasks (api-v2.md 3; wire-format.md): `get` one, and `wait`, the one polling helper, which polls
 * with backoff until OK, NG or ERROR and answers the final task.
 */
import { taskSchema, type Task } from '../spec/schemas.js';
import { isFinalTaskStatus } from '../spec/events.js';
import { TaskFailedError, TimeoutError, type FinalTask } from './errors.js';
import { sleep } from './retry.js';
import type { Transport } from './transport.js';

/** Options of `client.tasks.wait`. */
export interface WaitOptions {
  /** Give up after this long. Default 30 minutes. */
  timeoutMs?: number;
  /** First poll interval; it grows by half each poll up to `maxIntervalMs`. Default 200 ms. */
  intervalMs?: number;
  /** Longest poll interval. Default 5 s. */
  maxIntervalMs?: number;
  /** Throw TaskFailedError for NG and ERROR instead of answering the task. Default false. */
  throwOnFailure?: boolean;
  /** Called on every poll with the task as it is. */
  onPoll?: (task: Task) => void;
  /** Stops waiting. */
  signal?: AbortSignal;
}

/** Tasks: the updates the service runs after accepting them. Reach it as `client.tasks`. */
export class Tasks {
  /** @internal */
  constructor(private readonly transport: Transport) {}

  /** A task as it is now: WAITING, RUNNING, OK, NG or ERROR, with its messages. */
  get(id: number): Promise<Task> {
    return this.transport.call('tasks.get', { params: { task_id: id } }, taskSchema);
  }

  /**
   * Polls the task, with growing intervals, until it ends (OK, NG or ERROR), and answers it as it
   * ended. Throws TimeoutError after `timeoutMs`.
   */
  async wait(id: number, options: WaitOptions = {}): Promise<FinalTask> {
    const deadline = Date.now() + (options.timeoutMs ?? 30 * 60_000);
    let interval = options.intervalMs ?? 200;
    const maxInterval = options.maxIntervalMs ?? 5_000;
    for (;;) {
      const task = await this.get(id);
      options.onPoll?.(task);
      if (isFinalTaskStatus(task.status)) {
        const final: FinalTask = { id: task.id, status: task.status as FinalTask['status'], messages: task.messages ?? [] };
        if (options.throwOnFailure && final.status !== 'OK') throw new TaskFailedError(final);
        return final;
      }
      // The last poll is made at the deadline itself: a task that ends just before it is still seen.
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new TimeoutError(`task ${id} is still ${task.status} after ${options.timeoutMs ?? 30 * 60_000} ms`, { method: 'GET', path: `/tasks/${id}` });
      }
      await sleep(Math.min(interval, remaining), options.signal);
      interval = Math.min(maxInterval, Math.ceil(interval * 1.5));
    }
  }
}
