/**
 * What the fleet's tests share (DESIGN.md section 14): `wds-files fleet worker` as a child process
 * whose log is read as it comes, the fleet's tables read with a client of their own, and the
 * rule that no two runs of one company's pipeline overlap.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { expect } from 'vitest';
import { finished, spawnCli, type CliRun } from './cli-process.js';

export interface FleetWorkerProcess {
  child: ReturnType<typeof spawnCli>;
  /** Resolves when the worker has ended, with all it printed. */
  done: Promise<CliRun>;
  /** Everything it wrote to stderr so far. */
  log: () => string;
  /** Resolves once it says it takes runs (its pipelines registered, its cron set); rejects if it ended before. */
  up: Promise<void>;
}

/** Starts `wds-files fleet worker ARGS` (the --database and --companies are the caller's). */
export function startFleetWorker(args: string[], env: NodeJS.ProcessEnv): FleetWorkerProcess {
  const child = spawnCli(['fleet', 'worker', ...args], env);
  let text = '';
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const done = finished(child);
  const up = (async () => {
    for (;;) {
      if (/up to \d+ runs? at a time/.test(text)) return;
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the worker ended before it was up:\n${text}`);
      await sleep(100);
    }
  })();
  // A test that never waits for `up` must not see an unhandled rejection when the worker ends.
  up.catch(() => undefined);
  return { child, done, log: () => text, up };
}

/** Rows of a query, on a connection of its own. */
export async function query<T = Record<string, unknown>>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows as T[];
  } finally {
    await client.end();
  }
}

export interface RunRow { company: string; pipeline: string; trigger: string; due_at: Date | null; status: string; started_at: Date; finished_at: Date | null; worker: string; attempt: number; job_id: string }

/** The history of runs (wds_fleet.runs), by company and start. */
export const runHistory = (url: string): Promise<RunRow[]> => query<RunRow>(url, 'SELECT * FROM wds_fleet.runs ORDER BY company, started_at, id');

/** No two runs of one company's pipeline overlap in the history, a dead worker's included. */
export function expectNoOverlap(rows: RunRow[]): void {
  const byKey = new Map<string, RunRow[]>();
  for (const row of rows) byKey.set(`${row.company}/${row.pipeline}`, [...(byKey.get(`${row.company}/${row.pipeline}`) ?? []), row]);
  for (const [key, runs] of byKey) {
    for (let i = 1; i < runs.length; i += 1) {
      const before = runs[i - 1]!;
      expect(before.finished_at, `${key}: run ${i - 1} never ended`).not.toBeNull();
      expect(runs[i]!.started_at.getTime(), `${key}: run ${i} started before run ${i - 1} ended`).toBeGreaterThanOrEqual(before.finished_at!.getTime());
    }
  }
}

/** Waits until `test` holds, failing early with the workers' logs when one of them ended. */
export async function until(what: string, test: () => Promise<boolean> | boolean, workers: Pick<FleetWorkerProcess, 'child' | 'log'>[], timeoutMs = 600_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await test())) {
    const died = workers.find((w) => w.child.exitCode !== null || w.child.signalCode !== null);
    if (died) throw new Error(`a worker ended while waiting for ${what}:\n${died.log().slice(-4000)}`);
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${workers.map((w) => w.log().slice(-3000)).join('\n----\n')}`);
    await sleep(250);
  }
}
