/**
 * `webhook serve`'s own reconciliation (DESIGN.md section 15): once at start, then every
 * `everyMs`, one at a time. A reconcile that fails (the service down, in maintenance) is logged
 * and tried again at the next time; it never stops the receiver, whose deliveries matter more.
 */
import type { WdsClient } from '../client/client.js';
import type { WebhookInbox } from './inbox.js';
import { reconcile, type ReconcileResult } from './reconcile.js';

export interface ReconcileLoopOptions {
  everyMs: number;
  signal: AbortSignal;
  log: (line: string) => void;
  /** Each reconcile that ended, with what it stored. */
  onReconciled?: (result: ReconcileResult, at: Date) => void;
}

export class ReconcileLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(private readonly client: WdsClient, private readonly inbox: WebhookInbox, private readonly options: ReconcileLoopOptions) {
    options.signal.addEventListener('abort', () => this.stopTimer(), { once: true });
  }

  /** Reconciles now, and then every `everyMs`. */
  start(): void {
    if (this.options.signal.aborted) return;
    this.tick();
  }

  /** Resolves once the reconcile under way, if any, has ended (call it after `signal` aborts). */
  async finished(): Promise<void> {
    this.stopTimer();
    await this.running;
  }

  private tick(): void {
    this.timer = null;
    if (this.options.signal.aborted) return;
    this.running ??= this.once().finally(() => {
      this.running = null;
      if (!this.options.signal.aborted) this.timer = setTimeout(() => this.tick(), this.options.everyMs);
    });
  }

  private async once(): Promise<void> {
    const { log } = this.options;
    try {
      const result = await reconcile(this.client, this.inbox, {
        signal: this.options.signal, command: 'wds-files webhook serve (reconcile)', onWait: (line) => log(`reconcile: ${line}`),
      });
      const at = new Date();
      log(result.baseline
        ? `reconcile: first list recorded (${result.members} members); nothing to compare with yet`
        : `reconcile: ${result.created.length} created, ${result.updated.length} updated, ${result.deleted.length} deleted since ${result.previous_listed_at}; ${result.announced} announced, ${result.stored.length} stored as reconciled`);
      this.options.onReconciled?.(result, at);
    } catch (error) {
      if (this.options.signal.aborted) return;
      log(`reconcile: failed (${(error as Error).message}); tried again in ${Math.round(this.options.everyMs / 60_000)} min`);
    }
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
