/**
 * The pace of polls (tasks and asynchronous reads): a first wait, doubled each time up to a
 * ceiling. Each poll spends one of the 60 requests an hour, so the pace starts brisk for short
 * jobs and slows to the budget's own (one a minute) for long ones; the limiter's window still
 * holds a poll back when other requests have used the budget.
 */
import { sleep } from '../retry.js';
import type { LegacyTransport } from './transport.js';

export class PollPacer {
  private next: number;

  constructor(private readonly transport: LegacyTransport, private readonly what: string) {
    this.next = transport.options.poll.intervalMs;
  }

  /** Waits before the next poll, said through `onWait` (reason `poll`). */
  async wait(signal?: AbortSignal): Promise<void> {
    const { maxIntervalMs } = this.transport.options.poll;
    const ms = Math.min(this.next, maxIntervalMs);
    this.next = Math.min(maxIntervalMs, Math.max(1, this.next * 2));
    if (ms <= 0) return;
    const message = `polling ${this.what} again in ${(ms / 1000).toFixed(1)} s`;
    this.transport.announce({ reason: 'poll', waitMs: ms, message });
    this.transport.options.logger?.debug(message);
    await sleep(ms, signal);
  }
}
