/**
 * `fleet status` and `fleet run`: what the database knows of each company's pipelines (the last
 * run, how it ended, whether one is queued or under way, the next cron time), and one run queued
 * now. Both need only the database: no worker has to be up.
 */
import { Cron } from 'croner';
import { localClock } from '../schedule/service-time.js';
import type { FleetDatabase } from './database.js';
import { runKey, RUNS_QUEUE } from './queue.js';

export interface FleetPipelineStatus {
  company: string;
  pipeline: string;
  /** Its cron pattern, or null when only `fleet run` starts it. */
  schedule: string | null;
  /** `running`, `queued` (waiting for a worker), `retrying` (after a failure, with backoff), or `idle`. */
  state: 'running' | 'queued' | 'retrying' | 'idle';
  /** When the run under way started, or the queued one was queued. */
  since?: string;
  last_run?: {
    status: string;
    started_at: string;
    finished_at: string | null;
    files: number | null;
    bytes: number | null;
    worker: string;
    trigger: string;
    error?: string;
    snapshot?: string;
  };
  /** The next cron time (ISO), and the same in the service's time. */
  next_run?: string;
  next_run_service_time?: string;
}

/** Every pipeline a worker has registered or a run has named, by company and pipeline. */
export async function fleetStatus(db: FleetDatabase): Promise<FleetPipelineStatus[]> {
  const [{ rows: pipelines }, { rows: lasts }, { rows: live }] = await Promise.all([
    db.executeSql('SELECT company, pipeline, cron, time_zone FROM wds_fleet.pipelines'),
    db.executeSql(`SELECT DISTINCT ON (company, pipeline) company, pipeline, status, started_at, finished_at, files, bytes, worker, trigger, error, snapshot
      FROM wds_fleet.runs ORDER BY company, pipeline, started_at DESC, id DESC`),
    db.executeSql(`SELECT singleton_key, state, started_on, created_on FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')`, [RUNS_QUEUE]),
  ]);
  const byKey = new Map<string, FleetPipelineStatus>();
  const entry = (company: string, pipeline: string): FleetPipelineStatus => {
    const key = runKey(company, pipeline);
    let found = byKey.get(key);
    if (!found) byKey.set(key, (found = { company, pipeline, schedule: null, state: 'idle' }));
    return found;
  };
  const now = new Date();
  for (const row of pipelines) {
    const status = entry(String(row.company), String(row.pipeline));
    if (!row.cron) continue;
    status.schedule = String(row.cron);
    const next = new Cron(status.schedule, { timezone: String(row.time_zone), paused: true }).nextRun(now);
    if (next) {
      status.next_run = next.toISOString();
      status.next_run_service_time = `${localClock(next.getTime(), String(row.time_zone)).text} ${String(row.time_zone)}`;
    }
  }
  for (const row of lasts) {
    const status = entry(String(row.company), String(row.pipeline));
    status.last_run = {
      status: String(row.status), started_at: (row.started_at as Date).toISOString(), finished_at: row.finished_at ? (row.finished_at as Date).toISOString() : null,
      files: row.files === null ? null : Number(row.files), bytes: row.bytes === null ? null : Number(row.bytes), worker: String(row.worker), trigger: String(row.trigger),
      ...(row.error ? { error: String(row.error) } : {}), ...(row.snapshot ? { snapshot: String(row.snapshot) } : {}),
    };
  }
  for (const row of live) {
    const [company, ...rest] = String(row.singleton_key).split('/');
    const status = entry(company!, rest.join('/'));
    const state = row.state === 'active' ? 'running' : row.state === 'retry' ? 'retrying' : 'queued';
    // A running job outranks a queued one of the same key (there is at most one of each).
    if (status.state === 'running') continue;
    status.state = state;
    status.since = ((row.state === 'active' ? row.started_on : row.created_on) as Date).toISOString();
  }
  return [...byKey.values()].sort((a, b) => a.company.localeCompare(b.company) || a.pipeline.localeCompare(b.pipeline));
}

/** Whether the fleet knows the pipeline (a worker registered it). */
export async function knownPipeline(db: FleetDatabase, company: string, pipeline: string): Promise<{ known: boolean; companyKnown: boolean; pipelines: string[] }> {
  const { rows } = await db.executeSql('SELECT pipeline FROM wds_fleet.pipelines WHERE company = $1 ORDER BY pipeline', [company]);
  const pipelines = rows.map((row) => String(row.pipeline));
  return { known: pipelines.includes(pipeline), companyKnown: pipelines.length > 0, pipelines };
}
