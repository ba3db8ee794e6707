/**
 * Reconciliation in fleet mode (DESIGN.md section 15): `webhook reconcile --database --companies`
 * compares the members each company's service lists now with the last list kept in PostgreSQL, and
 * stores each change no delivery announced in `wds_fleet.webhook_events`, marked `reconciled`,
 * queueing the company's `on:` pipelines as a delivery does.
 *
 * - The events, the new list and its time are committed in one transaction: a reconcile cut short
 *   stores nothing, and the next finds the same changes.
 * - Two reconciles of one company take turns through an advisory lock held only for that
 *   transaction, not while the service answers; the one whose listing is older than the list kept
 *   stores nothing (the newer one has compared already).
 * - `listed_at` is the database's clock, taken before the listing, as `received_at` of deliveries
 *   is: a delivery received while the listing is on its way counts as after it.
 */
import type { WdsClient } from '../client/client.js';
import type { WebhookEvent } from '../spec/events.js';
import { compareMembers, memberHash, serviceTime, type ReconcileResult } from '../webhooks/reconcile.js';
import type { Executor, FleetDatabase } from './database.js';
import type { CompanyEventStore } from './webhook-events.js';

/** Rows of a list written by one statement. */
const ROWS_A_STATEMENT = 5_000;

export interface FleetReconcileResult extends ReconcileResult {
  company: string;
  /** Another reconcile kept a newer list meanwhile: nothing was compared or stored. */
  superseded: boolean;
}

/** Reconciles `store`'s company: see the file's comment. */
export async function reconcileCompany(client: WdsClient, db: FleetDatabase, store: CompanyEventStore, options: { signal?: AbortSignal; timeZone?: string } = {}): Promise<FleetReconcileResult> {
  const company = store.company.name;
  const { rows: [clock] } = await db.executeSql('SELECT clock_timestamp() AS now');
  const listedAt = clock!.now as Date;
  const listing = await client.members.list({ signal: options.signal });
  const current = new Map(listing.member_data.map((member) => [member.code, memberHash(member)]));
  return db.transaction(async (tx) => {
    await tx.executeSql('SELECT pg_advisory_xact_lock(hashtext($1))', [`wds-fleet-reconcile:${company}`]);
    const { rows: [kept] } = await tx.executeSql('SELECT listed_at FROM wds_fleet.member_lists WHERE company = $1', [company]);
    const previousAt = kept ? (kept.listed_at as Date) : null;
    const result: FleetReconcileResult = {
      company, superseded: false, baseline: previousAt === null, members: current.size, created: [], updated: [], deleted: [],
      announced: 0, stored: [], listed_at: listedAt.toISOString(), previous_listed_at: previousAt?.toISOString() ?? null,
    };
    if (previousAt && previousAt >= listedAt) return { ...result, superseded: true };
    if (previousAt) {
      const previous = await listedMembers(tx, company);
      const announced = await announcedSince(tx, company, previousAt);
      const eventTime = listing.updated_at ?? serviceTime(listedAt, options.timeZone ?? 'Asia/Tokyo');
      const changes = compareMembers(previous, current, announced, eventTime);
      Object.assign(result, { created: changes.created, updated: changes.updated, deleted: changes.deleted, announced: changes.announced });
      if (changes.missed.length) result.stored = (await store.appendIn(tx, changes.missed, 'reconciled')).stored;
    }
    await keepList(tx, company, listedAt, listing.updated_at ?? null, current);
    return result;
  });
}

async function listedMembers(tx: Executor, company: string): Promise<Map<string, string>> {
  const { rows } = await tx.executeSql('SELECT code, hash FROM wds_fleet.listed_members WHERE company = $1', [company]);
  return new Map(rows.map((row) => [String(row.code), String(row.hash)]));
}

/** The events of each member code received for `company` at or after `since`, whatever their source. */
async function announcedSince(tx: Executor, company: string, since: Date): Promise<Map<string, Set<WebhookEvent>>> {
  const { rows } = await tx.executeSql(
    'SELECT DISTINCT event, unnest(codes) AS code FROM wds_fleet.webhook_events WHERE company = $1 AND received_at >= $2',
    [company, since],
  );
  const seen = new Map<string, Set<WebhookEvent>>();
  for (const row of rows) {
    const code = String(row.code);
    let kinds = seen.get(code);
    if (!kinds) seen.set(code, (kinds = new Set()));
    kinds.add(row.event as WebhookEvent);
  }
  return seen;
}

/** Replaces the company's list with `members`. */
async function keepList(tx: Executor, company: string, listedAt: Date, serviceUpdatedAt: string | null, members: Map<string, string>): Promise<void> {
  await tx.executeSql(
    `INSERT INTO wds_fleet.member_lists (company, listed_at, service_updated_at) VALUES ($1, $2, $3)
     ON CONFLICT (company) DO UPDATE SET listed_at = $2, service_updated_at = $3`,
    [company, listedAt, serviceUpdatedAt],
  );
  await tx.executeSql('DELETE FROM wds_fleet.listed_members WHERE company = $1', [company]);
  const entries = [...members];
  for (let i = 0; i < entries.length; i += ROWS_A_STATEMENT) {
    const part = entries.slice(i, i + ROWS_A_STATEMENT);
    await tx.executeSql(
      'INSERT INTO wds_fleet.listed_members (company, code, hash) SELECT $1, * FROM unnest($2::text[], $3::text[])',
      [company, part.map(([code]) => code), part.map(([, hash]) => hash)],
    );
  }
}
