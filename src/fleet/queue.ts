/**
 * The fleet's jobs in pg-boss 10 (DESIGN.md section 14): one queue of runs, one job a run, keyed
 * `company/pipeline`; and one small queue per cron pattern, which pg-boss's own cron fills once a
 * minute-slot across the fleet and whose job starts the runs due at that time.
 *
 * - At most one run of a company's pipeline at a time: the runs queue is `stately` (at most one
 *   job of a key queued and one active), and a run is queued only when no job of its key is
 *   queued, retrying or running (a time due meanwhile is skipped, as a Kubernetes CronJob with
 *   `concurrencyPolicy: Forbid` skips it). The check and the send are one transaction under the
 *   key's advisory lock, so a key never has a queued job behind a running one, which in pg-boss 10
 *   would hold up the fetch of every other key.
 * - The lease is pg-boss's expiry: a job is `active` for `lease` seconds after it started or its
 *   worker last extended it. A worker extends it every quarter lease while the run goes on (what
 *   later pg-boss versions call a heartbeat); a dead worker's job expires, pg-boss's maintenance
 *   fails it, and its retry (with backoff) is taken by another worker.
 */
import { createHash } from 'node:crypto';
import PgBoss from 'pg-boss';
import type { Executor, FleetDatabase } from './database.js';

export const RUNS_QUEUE = 'wds-fleet-runs';
const CRON_QUEUE_PREFIX = 'wds-fleet-cron-';

/** What a run's job carries: names only, never a credential. */
export interface RunJobData {
  company: string;
  pipeline: string;
  /** What queued it: its schedule, a catch-up at a worker's start, `fleet run`, or webhook events its `on:` names. */
  trigger: 'schedule' | 'catch-up' | 'manual' | 'event';
  /** The cron time it is for (ISO), when scheduled. */
  due_at?: string;
}

export const runKey = (company: string, pipeline: string): string => `${company}/${pipeline}`;

/** The cron queue of a pattern in a time zone. */
export const cronQueueOf = (cron: string, timeZone: string): string =>
  `${CRON_QUEUE_PREFIX}${createHash('sha256').update(`${cron}\n${timeZone}`).digest('hex').slice(0, 16)}`;
export const isCronQueue = (name: string): boolean => name.startsWith(CRON_QUEUE_PREFIX);

/**
 * The lease and what follows from it. With the default 45 s lease a dead worker's run is started
 * again within about 90 s: up to 45 s until its lease lapses (less the last extension's age),
 * up to 22 s until maintenance fails it, 7 to 15 s of retry delay, and a poll of 2 s.
 */
export interface FleetTiming {
  leaseSeconds: number;
  heartbeatMs: number;
  maintenanceSeconds: number;
  retryDelaySeconds: number;
  retryLimit: number;
  pollMs: number;
}

export const DEFAULT_LEASE_SECONDS = 45;

/** The timing from WDS_FLEET_LEASE (tests shorten it); null and a message when it does not read. */
export function fleetTiming(env: NodeJS.ProcessEnv = process.env): FleetTiming {
  const text = env.WDS_FLEET_LEASE?.trim();
  const lease = text ? Number(text) : DEFAULT_LEASE_SECONDS;
  if (!Number.isInteger(lease) || lease < 4 || lease > 3600) throw new Error(`WDS_FLEET_LEASE must be a whole number of seconds from 4 to 3600, not "${text}"`);
  return {
    leaseSeconds: lease,
    heartbeatMs: Math.round((lease * 1000) / 4),
    maintenanceSeconds: Math.max(1, Math.round(lease / 2)),
    retryDelaySeconds: Math.max(1, Math.round(lease / 6)),
    retryLimit: 5,
    pollMs: Math.min(2000, Math.round((lease * 1000) / 4)),
  };
}

/**
 * pg-boss on the fleet's pool, its schema made or migrated. A worker supervises (maintenance,
 * expiry) and keeps the cron; `fleet run` and `fleet status` only send and read.
 */
export async function startBoss(db: FleetDatabase, timing: FleetTiming, role: 'worker' | 'client', onError: (error: Error) => void): Promise<PgBoss> {
  const boss = new PgBoss({
    db,
    schema: 'pgboss',
    migrate: true,
    supervise: role === 'worker',
    schedule: role === 'worker',
    maintenanceIntervalSeconds: timing.maintenanceSeconds,
  } as PgBoss.ConstructorOptions);
  boss.on('error', onError);
  const options = {
    name: RUNS_QUEUE, policy: 'stately', retryLimit: timing.retryLimit, retryDelay: timing.retryDelaySeconds, retryBackoff: true, expireInSeconds: timing.leaseSeconds,
  } as const;
  // The queue is made (and set) in the same turn: made at once by several processes, its table's
  // partition was once a deadlock. A worker's background work started by another process's start
  // can still meet it there, so a deadlock is tried again.
  await takingTurns(db, 'wds_fleet.pgboss-start', async () => {
    await boss.start();
    await againOnDeadlock(() => boss.createQueue(RUNS_QUEUE, options));
    // A queue made by an earlier version, or with another lease, takes this worker's settings.
    if (role === 'worker') await againOnDeadlock(() => boss.updateQueue(RUNS_QUEUE, options));
  });
  return boss;
}

/** PostgreSQL ends one side of a deadlock with 40P01; its work undone, it can be done again. */
async function againOnDeadlock<T>(fn: () => Promise<T>, tries = 4): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await fn();
    } catch (error) {
      const deadlock = (error as { code?: string }).code === '40P01' || /deadlock detected/.test(String((error as Error).message));
      if (!deadlock || attempt >= tries) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.random() * 100));
    }
  }
}

/**
 * `fn` while this process holds a session advisory lock named `name` on a connection of its own.
 * pg-boss 10 makes its schema when it finds none, under its own lock; but processes starting
 * together on a new database each looked for the schema before that lock, and the late ones then
 * fail on pg_namespace's unique index instead of finding it made. Taking turns before pg-boss
 * looks lets each later process find the schema there.
 */
async function takingTurns<T>(db: FleetDatabase, name: string, fn: () => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  let broken = false;
  const onError = (): void => {
    broken = true;
  };
  client.on('error', onError);
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
    try {
      return await fn();
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name]).catch(() => (broken = true));
    }
  } finally {
    client.removeListener('error', onError);
    // A connection whose unlock failed is closed, which lets the lock go with it.
    client.release(broken);
  }
}

/** A job of the key that is queued, waiting to retry, or running. */
export interface LiveJob {
  id: string;
  state: 'created' | 'retry' | 'active';
  started_on: Date | null;
  created_on: Date;
}

async function liveJob(tx: Executor, key: string): Promise<LiveJob | null> {
  const { rows } = await tx.executeSql(
    `SELECT id, state, started_on, created_on FROM pgboss.job WHERE name = $1 AND singleton_key = $2 AND state IN ('created', 'retry', 'active') ORDER BY created_on LIMIT 1`,
    [RUNS_QUEUE, key],
  );
  return (rows[0] as unknown as LiveJob | undefined) ?? null;
}

/**
 * Queues one run unless one of the key is queued, retrying or running: the new job's id, or the
 * live job that stood in its way. `within` runs it inside a caller's transaction;
 * `startAfterSeconds` holds the job back that long (an event's debounce).
 */
export async function enqueueRun(
  db: FleetDatabase, boss: PgBoss, data: RunJobData, within?: Executor, options: { startAfterSeconds?: number } = {},
): Promise<{ queued: string } | { live: LiveJob }> {
  const key = runKey(data.company, data.pipeline);
  const send = async (tx: Executor): Promise<{ queued: string } | { live: LiveJob }> => {
    await tx.executeSql('SELECT pg_advisory_xact_lock(hashtext($1))', [`wds-fleet-run:${key}`]);
    const live = await liveJob(tx, key);
    if (live) return { live };
    const start = options.startAfterSeconds ? { startAfter: options.startAfterSeconds } : {};
    const id = await boss.send(RUNS_QUEUE, data as unknown as object, { singletonKey: key, db: tx, ...start } as PgBoss.SendOptions);
    if (!id) {
      const now = await liveJob(tx, key);
      if (now) return { live: now };
      throw new Error(`pg-boss did not queue the run of ${key}`);
    }
    return { queued: id };
  };
  return within ? send(within) : db.transaction(send);
}

/** Extends the lease of a running job; false when the job is no longer this worker's (expired and retried, or gone). */
export async function extendLease(db: Executor, jobId: string, attempt: number, leaseSeconds: number): Promise<boolean> {
  // The attempt (pg-boss's retry count) tells this worker's start of the job from a later one's.
  const { rows } = await db.executeSql(
    `UPDATE pgboss.job SET expire_in = (now() - started_on) + make_interval(secs => $3)
      WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $4 RETURNING id`,
    [RUNS_QUEUE, jobId, leaseSeconds, attempt],
  );
  return rows.length === 1;
}
