/** What the scheduler knows of a pipeline and of a run: no more than it needs to start and report it. */

/** How a run ended, as `runPipelineFile` sums it up (the fields the scheduler reads). */
export interface RunOutcome {
  status: 'ok' | 'partial' | 'failed' | 'interrupted';
  started_at: string;
  finished_at: string;
  duration_ms: number;
  files: number;
  bytes: number;
  error?: string;
  /** Another run (another scheduler's, a `run`) held the pipeline's lock: this one did nothing. */
  busy?: boolean;
}

export interface ScheduledJob<S extends RunOutcome = RunOutcome> {
  /** The pipeline's name: unique among the jobs; names the state file and the metrics. */
  name: string;
  /** The pipeline file, for messages. */
  file: string;
  /** Cron of 5 or 6 fields, in service local time. */
  cron: string;
  /** What a restart does with the times missed while the scheduler was down. */
  catchUp: 'once' | 'skip';
  /** The service asked for its time and maintenance before each run; none: runs start when due. */
  baseUrl?: string;
  /** One run; told to stop through `signal`. A failure should come back as `status: 'failed'`. */
  run: (options: { signal: AbortSignal; log: (line: string) => void }) => Promise<S>;
  /** After each run (the notification); a failure here is logged and changes nothing else. */
  afterRun?: (outcome: S) => Promise<void>;
}
