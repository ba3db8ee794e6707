/**
 * The scheduler's Prometheus metrics, per pipeline: runs by status, files and bytes moved, the
 * last run's duration, the last success time, and whether a run is under way. A registry of its
 * own, so an SDK user embedding the scheduler keeps their default registry to themselves.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { RunOutcome } from './types.js';

export class ScheduleMetrics {
  readonly registry = new Registry();
  private readonly runs: Counter<'pipeline' | 'status'>;
  private readonly skipped: Counter<'pipeline' | 'reason'>;
  private readonly files: Counter<'pipeline'>;
  private readonly bytes: Counter<'pipeline'>;
  private readonly duration: Gauge<'pipeline'>;
  private readonly lastSuccess: Gauge<'pipeline'>;
  private readonly lastStatus: Gauge<'pipeline' | 'status'>;
  private readonly running: Gauge<'pipeline'>;

  constructor() {
    const registers = [this.registry];
    this.runs = new Counter({ name: 'wds_pipeline_runs_total', help: 'Runs of each pipeline, by how they ended', labelNames: ['pipeline', 'status'], registers });
    this.skipped = new Counter({
      name: 'wds_pipeline_runs_skipped_total', help: 'Due times not run: the previous run was still going (busy) or missed while down (missed)', labelNames: ['pipeline', 'reason'], registers,
    });
    this.files = new Counter({ name: 'wds_pipeline_files_total', help: 'Files the runs of each pipeline moved', labelNames: ['pipeline'], registers });
    this.bytes = new Counter({ name: 'wds_pipeline_bytes_total', help: 'Bytes the runs of each pipeline moved', labelNames: ['pipeline'], registers });
    this.duration = new Gauge({ name: 'wds_pipeline_last_run_duration_seconds', help: 'How long the last run of each pipeline took', labelNames: ['pipeline'], registers });
    this.lastSuccess = new Gauge({
      name: 'wds_pipeline_last_success_timestamp_seconds', help: 'When the last run that ended ok or partial finished (Unix time)', labelNames: ['pipeline'], registers,
    });
    this.lastStatus = new Gauge({ name: 'wds_pipeline_last_run_status', help: '1 for how the last run of each pipeline ended', labelNames: ['pipeline', 'status'], registers });
    this.running = new Gauge({ name: 'wds_pipeline_running', help: '1 while a run of the pipeline is under way or waiting for the service', labelNames: ['pipeline'], registers });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Makes every series of a pipeline exist from the start, at 0, so alerts see it before its first run. */
  declare(pipeline: string): void {
    for (const status of ['ok', 'partial', 'failed', 'interrupted'] as const) this.runs.inc({ pipeline, status }, 0);
    this.files.inc({ pipeline }, 0);
    this.bytes.inc({ pipeline }, 0);
    this.running.set({ pipeline }, 0);
  }

  setRunning(pipeline: string, on: boolean): void {
    this.running.set({ pipeline }, on ? 1 : 0);
  }

  skip(pipeline: string, reason: 'busy' | 'missed', count = 1): void {
    this.skipped.inc({ pipeline, reason }, count);
  }

  /** The last success from an earlier start of the scheduler. */
  restoreLastSuccess(pipeline: string, at: string): void {
    const ms = Date.parse(at);
    if (Number.isFinite(ms)) this.lastSuccess.set({ pipeline }, ms / 1000);
  }

  record(pipeline: string, outcome: RunOutcome): void {
    this.runs.inc({ pipeline, status: outcome.status });
    this.files.inc({ pipeline }, outcome.files);
    this.bytes.inc({ pipeline }, outcome.bytes);
    this.duration.set({ pipeline }, outcome.duration_ms / 1000);
    for (const status of ['ok', 'partial', 'failed', 'interrupted'] as const) this.lastStatus.set({ pipeline, status }, status === outcome.status ? 1 : 0);
    if (outcome.status === 'ok' || outcome.status === 'partial') this.lastSuccess.set({ pipeline }, Date.parse(outcome.finished_at) / 1000);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
