/**
 * The receiver's Prometheus metrics and health for `webhook serve --status-port`: deliveries
 * stored, duplicates, refusals by reason, the inbox's size, and what reconciliation and the
 * pipelines started by events report through `reconciled` and `pipelineStarted`. A registry of
 * its own, as the scheduler's (src/schedule/metrics.ts).
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { DeliveryOutcome, RefusalReason } from './receiver.js';
import type { WebhookInbox } from './inbox.js';

const REASONS: readonly RefusalReason[] = ['not_found', 'method', 'token', 'content_type', 'too_large', 'shape', 'aborted', 'store_failed'];

/** What `/healthz` says: failing while the inbox's last append failed (deliveries get 503 then). */
export interface WebhookHealth {
  ok: boolean;
  failing: { what: string; since: string; error: string }[];
}

export class WebhookMetrics {
  readonly registry = new Registry();
  private readonly deliveries: Counter<'outcome'>;
  private readonly refused: Counter<'reason'>;
  private readonly events: Counter<'source'>;
  private readonly lastReconciliation: Gauge;
  private readonly pipelines: Counter<'pipeline'>;
  private storeFailing: { since: string; error: string } | null = null;

  /** `inbox`: the folder inbox whose size is shown; none for the fleet's table. */
  constructor(inbox: Pick<WebhookInbox, 'size' | 'bytes'> | null) {
    const registers = [this.registry];
    this.deliveries = new Counter({ name: 'wds_webhook_deliveries_total', help: 'Deliveries answered 2xx: stored, or a duplicate of one stored before', labelNames: ['outcome'], registers });
    this.refused = new Counter({ name: 'wds_webhook_refused_total', help: 'Requests refused, by reason; nothing of them was stored', labelNames: ['reason'], registers });
    this.events = new Counter({ name: 'wds_webhook_events_stored_total', help: 'Events this process stored, by source (delivery or reconciled)', labelNames: ['source'], registers });
    this.lastReconciliation = new Gauge({ name: 'wds_webhook_last_reconciliation_timestamp_seconds', help: 'When the last reconciliation ended (Unix time); 0 before the first', registers });
    this.pipelines = new Counter({ name: 'wds_webhook_pipeline_runs_started_total', help: 'Pipeline runs started by events, per pipeline', labelNames: ['pipeline'], registers });
    if (inbox) {
      new Gauge({ name: 'wds_webhook_inbox_events', help: 'Events in the inbox', registers, collect() { this.set(inbox.size); } });
      new Gauge({ name: 'wds_webhook_inbox_bytes', help: 'Bytes of the inbox file', registers, collect() { this.set(inbox.bytes); } });
    }
    for (const outcome of ['stored', 'duplicate']) this.deliveries.inc({ outcome }, 0);
    for (const reason of REASONS) this.refused.inc({ reason }, 0);
    for (const source of ['delivery', 'reconciled']) this.events.inc({ source }, 0);
    collectDefaultMetrics({ register: this.registry });
  }

  /** Counts one request's outcome (the receiver's `onOutcome`). */
  record(outcome: DeliveryOutcome): void {
    if (outcome.outcome === 'refused') {
      this.refused.inc({ reason: outcome.reason });
      if (outcome.reason === 'store_failed') this.storeFailing ??= { since: new Date().toISOString(), error: outcome.error?.message ?? outcome.message };
      return;
    }
    this.storeFailing = null;
    this.deliveries.inc({ outcome: outcome.outcome });
    if (outcome.outcome === 'stored') this.events.inc({ source: 'delivery' }, outcome.events.length);
  }

  /** A reconciliation ended at `at`, having stored `stored` events. */
  reconciled(at: Date, stored: number): void {
    this.lastReconciliation.set(at.getTime() / 1000);
    this.events.inc({ source: 'reconciled' }, stored);
  }

  /** A pipeline run was started by events. */
  pipelineStarted(pipeline: string): void {
    this.pipelines.inc({ pipeline });
  }

  health(): WebhookHealth {
    return this.storeFailing ? { ok: false, failing: [{ what: 'inbox', ...this.storeFailing }] } : { ok: true, failing: [] };
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
