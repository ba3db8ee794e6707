/**
 * A fleet worker's Prometheus metrics, labelled by `company` and `pipeline`: the runs this worker
 * ended by status, the files and bytes they moved, their failures, the runs under way, and whether
 * the database answers. Counters are the worker's own; Prometheus sums the workers. Every company's
 * series exist from the start at 0, so an alert sees a company before its first run.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { RunOutcome } from '../schedule/types.js';

type Labels = 'company' | 'pipeline';

export class FleetMetrics {
  readonly registry = new Registry();
  private readonly runs: Counter<Labels | 'status'>;
  private readonly failures: Counter<Labels>;
  private readonly files: Counter<Labels>;
  private readonly bytes: Counter<Labels>;
  private readonly skipped: Counter<Labels>;
  private readonly running: Gauge<Labels>;
  private readonly databaseUp: Gauge;

  constructor() {
    const registers = [this.registry];
    this.runs = new Counter({ name: 'wds_fleet_runs_total', help: 'Runs this worker ended, by company, pipeline and how they ended', labelNames: ['company', 'pipeline', 'status'], registers });
    this.failures = new Counter({ name: 'wds_fleet_failures_total', help: 'Runs this worker ended as failed (each is retried with backoff)', labelNames: ['company', 'pipeline'], registers });
    this.files = new Counter({ name: 'wds_fleet_files_total', help: 'Files the runs of this worker moved', labelNames: ['company', 'pipeline'], registers });
    this.bytes = new Counter({ name: 'wds_fleet_bytes_total', help: 'Bytes the runs of this worker moved', labelNames: ['company', 'pipeline'], registers });
    this.skipped = new Counter({
      name: 'wds_fleet_runs_skipped_total', help: 'Due times not queued because a run of the pipeline was queued or under way', labelNames: ['company', 'pipeline'], registers,
    });
    this.running = new Gauge({ name: 'wds_fleet_running', help: '1 while this worker runs the pipeline of the company', labelNames: ['company', 'pipeline'], registers });
    this.databaseUp = new Gauge({ name: 'wds_fleet_database_up', help: '1 while the database answers this worker', registers });
    collectDefaultMetrics({ register: this.registry });
  }

  declare(company: string, pipeline: string): void {
    for (const status of ['ok', 'partial', 'failed', 'interrupted'] as const) this.runs.inc({ company, pipeline, status }, 0);
    this.failures.inc({ company, pipeline }, 0);
    this.files.inc({ company, pipeline }, 0);
    this.bytes.inc({ company, pipeline }, 0);
    this.skipped.inc({ company, pipeline }, 0);
    this.running.set({ company, pipeline }, 0);
  }

  setRunning(company: string, pipeline: string, on: boolean): void {
    this.running.set({ company, pipeline }, on ? 1 : 0);
  }

  skip(company: string, pipeline: string): void {
    this.skipped.inc({ company, pipeline });
  }

  setDatabaseUp(up: boolean): void {
    this.databaseUp.set(up ? 1 : 0);
  }

  record(company: string, pipeline: string, outcome: RunOutcome): void {
    this.runs.inc({ company, pipeline, status: outcome.status });
    if (outcome.status === 'failed') this.failures.inc({ company, pipeline });
    this.files.inc({ company, pipeline }, outcome.files);
    this.bytes.inc({ company, pipeline }, outcome.bytes);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
