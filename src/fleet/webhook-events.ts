/**
 * Webhook deliveries in fleet mode (DESIGN.md sections 14 and 15). `webhook serve --database
 * --companies` takes each company's deliveries at a path of its own and commits their events to
 * `wds_fleet.webhook_events` before it answers; in the same transaction, each pipeline of that
 * company whose `on:` names one of the events is queued in pg-boss, held back by its `debounce`.
 *
 * A burst of events makes one run, as `webhook serve --pipelines` does it: the queue takes one run
 * of a pipeline at a time, so events that find its run queued (still in its debounce) join it, and
 * events that come while it runs are found by the worker when the run ends ({@link eventsDuringRun}),
 * which queues one more.
 */
import type PgBoss from 'pg-boss';
import { eventKey, type AppendResult, type InboxEvent, type InboxEventInput, type InboxSource } from '../webhooks/inbox.js';
import type { EventStore } from '../webhooks/receiver.js';
import type { WebhookEvent } from '../spec/events.js';
import type { FleetCompany } from './companies.js';
import type { Executor, FleetDatabase } from './database.js';
import { enqueueRun, runKey } from './queue.js';

/** One event of the table: an inbox event, with the company it came for. */
export interface FleetInboxEvent extends InboxEvent {
  company: string;
}

/** A company's events in the database: what the receiver stores a delivery in. */
export class CompanyEventStore implements EventStore {
  constructor(
    private readonly db: FleetDatabase,
    private readonly boss: PgBoss,
    readonly company: FleetCompany,
    private readonly log: (line: string) => void,
  ) {}

  /** Stores the events new to the table and queues the pipelines they start; all or nothing, in one transaction. */
  append(events: InboxEventInput[], source: InboxSource): Promise<AppendResult> {
    return this.db.transaction((tx) => this.appendIn(tx, events, source));
  }

  /** As `append`, inside the caller's transaction: a reconcile stores its events and its list together. */
  async appendIn(tx: Executor, events: InboxEventInput[], source: InboxSource): Promise<AppendResult> {
    const result = await insertEvents(tx, this.company.name, events, source);
    for (const pipeline of this.company.pipelines.values()) {
      const matching = result.stored.filter((event) => pipeline.on?.events.includes(event.event));
      if (!pipeline.on || !matching.length) continue;
      const key = runKey(this.company.name, pipeline.name);
      const seconds = Math.ceil(pipeline.on.debounce_ms / 1000);
      const queued = await enqueueRun(this.db, this.boss, { company: this.company.name, pipeline: pipeline.name, trigger: 'event' }, tx, { startAfterSeconds: seconds });
      const what = [...new Set(matching.map((event) => event.event))].join(', ');
      this.log('queued' in queued
        ? `${key}: ${what}; queued to start in ${seconds} s`
        : `${key}: ${what}; joins its run ${queued.live.state === 'active' ? 'under way (one more follows it)' : 'already queued'}`);
    }
    return result;
  }
}

async function insertEvents(tx: Executor, company: string, events: InboxEventInput[], source: InboxSource): Promise<AppendResult> {
  const result: AppendResult = { stored: [], duplicates: 0 };
  for (const input of events) {
    const id = eventKey(input);
    const { rows } = await tx.executeSql(
      `INSERT INTO wds_fleet.webhook_events (company, id, event, event_time, codes, source) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (company, id) DO NOTHING RETURNING received_at`,
      [company, id, input.event, input.event_time, input.codes, source],
    );
    if (!rows.length) {
      result.duplicates += 1;
      continue;
    }
    result.stored.push({ id, event: input.event, event_time: input.event_time, codes: input.codes, received_at: (rows[0]!.received_at as Date).toISOString(), source });
  }
  return result;
}

/** The table's events, oldest first; only one company's, or those received since a time, when asked. */
export async function* databaseEvents(db: FleetDatabase, options: { company?: string; since?: Date } = {}): AsyncGenerator<FleetInboxEvent> {
  // A page at a time, by the table's order of arrival: a long history is never held whole.
  for (let after = 0; ;) {
    const { rows } = await db.executeSql(
      `SELECT seq, company, id, event, event_time, codes, source, received_at FROM wds_fleet.webhook_events
        WHERE seq > $1 AND ($2::text IS NULL OR company = $2) AND ($3::timestamptz IS NULL OR received_at >= $3) ORDER BY seq LIMIT 1000`,
      [after, options.company ?? null, options.since ?? null],
    );
    for (const row of rows) {
      yield {
        id: String(row.id), event: row.event as WebhookEvent, event_time: String(row.event_time), codes: row.codes as string[],
        received_at: (row.received_at as Date).toISOString(), source: row.source as InboxSource, company: String(row.company),
      };
    }
    if (rows.length < 1000) return;
    after = Number(rows.at(-1)!.seq);
  }
}

/** How many of the company's events of these kinds were received since the run started: each needs one more run. */
export async function eventsDuringRun(db: Executor, company: string, events: readonly WebhookEvent[], startedOn: Date): Promise<number> {
  const { rows } = await db.executeSql(
    'SELECT count(*)::int AS n FROM wds_fleet.webhook_events WHERE company = $1 AND event = ANY($2::text[]) AND received_at >= $3',
    [company, [...events], startedOn],
  );
  return Number(rows[0]?.n ?? 0);
}
