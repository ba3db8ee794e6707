/**
 * The fleet's one shared part (DESIGN.md section 14): a PostgreSQL pool that pg-boss and the
 * fleet's own tables share, and those tables, made or brought up to date at start. An outage is
 * told once when it starts and once when it ends, not at every failed query. Messages name the
 * database's host, never its password.
 */
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { redact, redactUrl, registerSecret } from '../util/redact.js';

/** What pg-boss needs of a database (its `db` option): one statement at a time. */
export interface Executor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount?: number | null }>;
}

/** Errors that mean the database cannot be reached now, rather than a wrong statement. */
const OUTAGE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004']);

export function isOutage(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  return (code !== undefined && OUTAGE_CODES.has(code)) || /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection/i.test(message ?? '');
}

/** The database could not be used: the message names its host and the cause, never the password. */
export class DatabaseError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(redact(message), options);
    this.name = 'DatabaseError';
  }
}

/** Why a URL cannot be used, or null: it must be `postgres://` or `postgresql://` with a host. */
export function databaseUrlProblem(url: string): string | null {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (!parsed?.hostname || !/^postgres(ql)?:$/.test(parsed.protocol)) return 'must be a URL such as postgres://user:password@host:5432/database';
  return null;
}

/** Where a URL points, for messages: `host:port/database`, without user or password. */
export function databasePlace(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}/${parsed.pathname.replace(/^\//, '') || '(default database)'}`;
}

/** An error of the database as words: its code when the message lacks it. */
function causeOf(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  const text = message || String(error);
  return code && !text.includes(code) ? `${code}: ${text}` : text;
}

export class FleetDatabase implements Executor {
  readonly pool: pg.Pool;
  private downSince: number | null = null;

  /** `connectMs`: how long a new connection may take (default 10 s; the webhook receiver has less, as the service waits 10 s for its answer). */
  constructor(readonly url: string, private readonly log: (line: string) => void, options: { max?: number; connectMs?: number } = {}) {
    const problem = databaseUrlProblem(url);
    if (problem) throw new DatabaseError(`the database URL ${problem}`);
    registerSecret(decodeURIComponent(new URL(url).password));
    this.pool = new pg.Pool({ connectionString: url, max: options.max ?? 10, connectionTimeoutMillis: options.connectMs ?? 10_000, application_name: 'wds-files' });
    // An idle connection the server closed (a restart) is an outage to tell, not a crash.
    this.pool.on('error', (error) => this.failed(error));
  }

  /** The database's address without its password, for messages. */
  get shown(): string {
    return redactUrl(this.url);
  }

  /** `host:port/database`, for messages that name where the database is. */
  get place(): string {
    return databasePlace(this.url);
  }

  /** Whether the last statement reached the database. */
  get up(): boolean {
    return this.downSince === null;
  }

  async executeSql(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount?: number | null }> {
    try {
      const result = await this.pool.query(text, values as unknown[]);
      this.reached();
      return result;
    } catch (error) {
      this.failed(error);
      throw error;
    }
  }

  /** `fn` in one transaction on one connection; rolled back when it throws. */
  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.failed(error);
      throw error;
    }
    let broken = false;
    // A checked-out connection has no listener of the pool's: one the server drops between two
    // statements would otherwise be an unhandled 'error' that ends the process.
    const onError = (error: Error): void => {
      broken = true;
      this.failed(error);
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const result = await fn({ executeSql: (text, values) => client.query(text, values as unknown[]) });
      await client.query('COMMIT');
      this.reached();
      return result;
    } catch (error) {
      broken = isOutage(error);
      if (!broken) await client.query('ROLLBACK').catch(() => undefined);
      this.failed(error);
      throw error;
    } finally {
      client.removeListener('error', onError);
      // A connection the server dropped is let go rather than handed to the next caller.
      client.release(broken);
    }
  }

  /**
   * Runs `fn` until it succeeds, waiting `everyMs` after each outage; other errors are thrown.
   * Stops (throwing the outage) when `until` says so, or at once when `signal` aborts.
   */
  async untilReached<T>(fn: () => Promise<T>, options: { everyMs: number; until?: () => boolean; signal?: AbortSignal }): Promise<T> {
    for (;;) {
      try {
        return await fn();
      } catch (error) {
        if (!isOutage(error) || options.until?.() || options.signal?.aborted) throw error;
        await delay(options.everyMs, undefined, options.signal ? { signal: options.signal } : undefined).catch(() => undefined);
        if (options.signal?.aborted) throw error;
      }
    }
  }

  /**
   * `fn` in one transaction, waited through an outage of up to `outageMs` (default 5 minutes)
   * and then failed with a DatabaseError naming the host: what a run's limit windows and journal
   * use, so that a restart of the database stalls a run rather than failing it.
   */
  async patiently<T>(fn: (tx: Executor) => Promise<T>, outageMs = 300_000): Promise<T> {
    const started = Date.now();
    try {
      return await this.untilReached(() => this.transaction(fn), { everyMs: 1000, until: () => Date.now() - started >= outageMs });
    } catch (error) {
      const outage = isOutage(error) ? ` (out of reach for ${Math.round((Date.now() - started) / 1000)} s)` : '';
      throw new DatabaseError(`PostgreSQL at ${this.place}: ${causeOf(error)}${outage}`, { cause: error });
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private reached(): void {
    if (this.downSince === null) return;
    this.log(`PostgreSQL at ${this.place} answers again after ${Math.round((Date.now() - this.downSince) / 1000)} s; going on`);
    this.downSince = null;
  }

  private failed(error: unknown): void {
    if (!isOutage(error) || this.downSince !== null) return;
    this.downSince = Date.now();
    this.log(redact(`PostgreSQL at ${this.place} cannot be reached (${causeOf(error)}); waiting for it`));
  }
}

/** The fleet's own tables, made or brought up to date at start; pg-boss makes its own schema. */
const SCHEMA = `
CREATE SCHEMA IF NOT EXISTS wds_fleet;
-- The company's limit windows (section 8), one row per company and interface (v2, v1), keyed by
-- the consumer key's sha256 so that the table never shows the key.
CREATE TABLE IF NOT EXISTS wds_fleet.limit_windows (
  company text NOT NULL,
  api text NOT NULL,
  windows jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company, api)
);
-- Import journals (section 8): each company's lines in the order written, by the same key.
CREATE TABLE IF NOT EXISTS wds_fleet.journal_lines (
  company text NOT NULL,
  seq bigserial NOT NULL,
  line text NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company, seq)
);
-- The history of runs: one row an attempt, from its start; a dead worker's stays 'running' until
-- the worker that takes the job over marks it 'lost'.
CREATE TABLE IF NOT EXISTS wds_fleet.runs (
  id bigserial PRIMARY KEY,
  job_id uuid NOT NULL,
  company text NOT NULL,
  pipeline text NOT NULL,
  trigger text NOT NULL,
  due_at timestamptz,
  attempt int NOT NULL DEFAULT 0,
  worker text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  status text NOT NULL DEFAULT 'running',
  files bigint,
  bytes bigint,
  error text,
  snapshot text
);
CREATE INDEX IF NOT EXISTS runs_company_pipeline ON wds_fleet.runs (company, pipeline, started_at DESC);
CREATE INDEX IF NOT EXISTS runs_job ON wds_fleet.runs (job_id);
-- Each company's pipelines as the workers' companies files name them, with the due time its
-- schedule has dealt with up to (what a worker's start catches up from).
CREATE TABLE IF NOT EXISTS wds_fleet.pipelines (
  company text NOT NULL,
  pipeline text NOT NULL,
  cron text,
  time_zone text NOT NULL,
  catch_up text,
  handled_until timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company, pipeline)
);
-- Webhook deliveries received in fleet mode (DESIGN.md section 15), each company's by its path:
-- one row an event, keyed as the folder inbox keys its lines, so the same event twice is one row.
CREATE TABLE IF NOT EXISTS wds_fleet.webhook_events (
  company text NOT NULL,
  id text NOT NULL,
  seq bigserial NOT NULL,
  event text NOT NULL,
  event_time text NOT NULL,
  codes text[] NOT NULL,
  source text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company, id)
);
CREATE INDEX IF NOT EXISTS webhook_events_received ON wds_fleet.webhook_events (company, received_at);
-- Each company's last member list seen by webhook reconcile --database (DESIGN.md section 15):
-- when it was asked for (the database's clock, as webhook_events.received_at), and each member's
-- code with the hash of its listed fields.
CREATE TABLE IF NOT EXISTS wds_fleet.member_lists (
  company text PRIMARY KEY,
  listed_at timestamptz NOT NULL,
  service_updated_at text
);
CREATE TABLE IF NOT EXISTS wds_fleet.listed_members (
  company text NOT NULL,
  code text NOT NULL,
  hash text NOT NULL,
  PRIMARY KEY (company, code)
);
`;

/** Makes the fleet's tables; processes starting together take turns through an advisory lock. */
export async function migrate(db: FleetDatabase): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.executeSql("SELECT pg_advisory_xact_lock(hashtext('wds_fleet.migrate'))");
    await tx.executeSql(SCHEMA);
  });
}

/**
 * Connects to `url` and brings the tables up to date: a database out of reach, or refusing us, is
 * a DatabaseError naming its host at once, before anything is sent to the service.
 */
export async function openDatabase(url: string, log: (line: string) => void, options: { max?: number; connectMs?: number } = {}): Promise<FleetDatabase> {
  const db = new FleetDatabase(url, log, options);
  try {
    await migrate(db);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw new DatabaseError(`cannot use PostgreSQL at ${db.place}: ${causeOf(error)}`, { cause: error });
  }
  return db;
}

/** `work`, or the stop signal's reason once it aborts (a connection attempt may hang for its whole timeout). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  work.catch(() => undefined);
  return new Promise((resolve, reject) => {
    const stop = (): void => reject(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}
