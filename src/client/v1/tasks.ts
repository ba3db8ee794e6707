/** Operation 11, `/task/{progress_id}`: a task as it is, and waiting for it to end. */
import { TimeoutError } from '../errors.js';
import { taskSchema } from './schemas.js';
import { PollPacer } from './polling.js';
import type { LegacyTransport } from './transport.js';
import type { LegacyReadOptions, LegacyTask, LegacyTaskWaitOptions } from './types.js';

const FINAL = new Set(['OK', 'NG', 'ERROR']);

/** The tasks that updates queue. Reach it as `legacyClient.tasks`. */
export class LegacyTasks {
  /** @internal */
  constructor(private readonly transport: LegacyTransport) {}

  /** A task as it is now: WAITING, RUNNING, OK, NG or ERROR, with `errors` once it ended NG or ERROR. */
  async get(progressId: number | string, options: LegacyReadOptions = {}): Promise<LegacyTask> {
    const id = encodeURIComponent(String(progressId));
    const task = await this.transport.postParsed(`task/${id}`, taskSchema, { signal: options.signal });
    return { progressId: task.progress_id, status: task.status, errors: task.errors ?? [] };
  }

  /**
   * Polls the task until it ends (OK, NG or ERROR) and answers it as it ended, NG and ERROR with
   * their `errors`. Polls are paced by the client's `poll` option and said through `onWait`; each
   * one is a request of the hourly budget. Throws TimeoutError when `timeoutMs` passes first.
   */
  async wait(progressId: number | string, options: LegacyTaskWaitOptions = {}): Promise<LegacyTask> {
    const signal = this.transport.signal(options.signal);
    const limit = options.timeoutMs ?? 3_600_000;
    const deadline = Date.now() + limit;
    const pacer = new PollPacer(this.transport, `task ${progressId}`);
    for (;;) {
      await pacer.wait(signal);
      const task = await this.get(progressId, { signal });
      options.onPoll?.(task);
      if (FINAL.has(task.status)) return task;
      if (Date.now() >= deadline) {
        throw new TimeoutError(`task ${progressId} is still ${task.status} after ${limit} ms`, { method: 'POST', path: `/task/${progressId}` });
      }
    }
  }
}
