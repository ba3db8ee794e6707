/**
 * The pipelines `wds-files schedule` runs: the files named, or the *.yaml and *.yml files of the
 * folders named, that have a `schedule`. Every problem is gathered before anything starts, so a
 * service manager sees one failed start that names each file, line and rule, not a scheduler
 * that runs some pipelines and quietly drops others.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPipelineFile, PipelineFileError, type LoadedPipeline, type PipelineProblem } from '../pipeline-files/load.js';
import { runPipelineFile, type PipelineRunSummary } from '../pipeline-files/run.js';
import type { WindowStores } from '../client/window-store.js';
import type { JournalStores } from '../stages/import/journal/store.js';
import { notifyRun } from '../pipeline-files/notify.js';
import type { RunOutcome, ScheduledJob } from './types.js';

const PIPELINE_FILE = /\.ya?ml$/i;

export interface ScheduledPipelines {
  pipelines: LoadedPipeline[];
  problems: PipelineProblem[];
  /** Files of the folders named that have no schedule (or, for events, no `on`): left out, and said so. */
  unscheduled: string[];
}

const problemAt = (file: string, message: string): PipelineProblem => ({ file, line: 1, column: 1, message });

/** What starts a pipeline: its `schedule` (`wds-files schedule`) or its `on` events (`webhook serve --pipelines`). */
export type PipelineTrigger = 'schedule' | 'events';

const NOT_STARTED: Record<PipelineTrigger, string> = {
  schedule: 'has no schedule: add `schedule: "<cron>"` to run it with `wds-files schedule`, or run it once with `wds-files run`',
  events: 'has no `on`: add `on: [member_created]` (or another member event) for `webhook serve --pipelines` to run it after such events, or run it once with `wds-files run`',
};

/**
 * Loads the pipelines to schedule from files and folders; `env` fills `${VAR}` and the connection.
 * With `trigger: 'events'`, the pipelines that name member events instead.
 */
export async function loadScheduledPipelines(paths: string[], env: NodeJS.ProcessEnv = process.env, trigger: PipelineTrigger = 'schedule'): Promise<ScheduledPipelines> {
  const found: { file: string; named: boolean }[] = [];
  const problems: PipelineProblem[] = [];
  for (const path of paths) {
    let isFolder: boolean;
    try {
      isFolder = (await stat(path)).isDirectory();
    } catch {
      problems.push(problemAt(path, 'no such file or folder'));
      continue;
    }
    if (!isFolder) {
      found.push({ file: path, named: true });
      continue;
    }
    const names = (await readdir(path)).filter((name) => PIPELINE_FILE.test(name)).sort();
    if (!names.length) problems.push(problemAt(path, 'this folder holds no pipeline file (*.yaml or *.yml)'));
    for (const name of names) found.push({ file: join(path, name), named: false });
  }

  const pipelines: LoadedPipeline[] = [];
  const unscheduled: string[] = [];
  const byName = new Map<string, string>();
  for (const { file, named } of found) {
    let pipeline: LoadedPipeline;
    try {
      pipeline = await loadPipelineFile(file, env);
    } catch (error) {
      if (!(error instanceof PipelineFileError)) throw error;
      problems.push(...error.problems);
      continue;
    }
    if (trigger === 'schedule' ? !pipeline.schedule : !pipeline.on) {
      if (named) problems.push(problemAt(file, NOT_STARTED[trigger]));
      else unscheduled.push(file);
      continue;
    }
    const earlier = byName.get(pipeline.name);
    if (earlier) {
      problems.push(problemAt(file, `the name "${pipeline.name}" is taken by ${earlier}; each pipeline's name keys its lock, state and metrics, so names must differ`));
      continue;
    }
    byName.set(pipeline.name, file);
    const missing = missingConnection(pipeline, env);
    if (missing) {
      problems.push(problemAt(file, missing));
      continue;
    }
    pipelines.push(pipeline);
  }
  return { pipelines, problems, unscheduled };
}

/**
 * A scheduled run has nobody to fall back to the embedded emulator for: a pipeline without a
 * service to reach is refused at start rather than failing every night.
 */
function missingConnection(pipeline: LoadedPipeline, env: NodeJS.ProcessEnv): string | null {
  const missing = [
    !(pipeline.connection.base_url ?? env.WDS_BASE_URL) && 'connection.base_url (or WDS_BASE_URL)',
    !(pipeline.connection.consumer_key ?? env.WDS_CONSUMER_KEY) && 'connection.consumer_key (or WDS_CONSUMER_KEY)',
    !(pipeline.connection.consumer_secret ?? pipeline.connection.consumer_secret_file ?? env.WDS_CONSUMER_SECRET) && 'connection.consumer_secret or consumer_secret_file (or WDS_CONSUMER_SECRET)',
  ].filter(Boolean);
  return missing.length ? `a pipeline run on its own needs a service to connect to: set ${missing.join(', ')}` : null;
}

/** The full summary a notification carries, also for a run whose function threw. */
function summaryOf(pipeline: LoadedPipeline, outcome: RunOutcome): PipelineRunSummary {
  const exitCode = outcome.status === 'ok' ? 0 : outcome.status === 'partial' ? 3 : 1;
  return { pipeline: pipeline.name, exit_code: exitCode, counts: {}, ...outcome };
}

export interface RunnerOptions {
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  onSummary?: (summary: PipelineRunSummary) => void;
  /** Where the company's limit windows are shared with other machines (the fleet's database). */
  windowStores?: WindowStores;
  /** Where imports keep their journal, shared with other machines (the fleet's database). */
  journals?: JournalStores;
}

/** How a pipeline is run and notified, whatever starts it (its schedule, or member events). */
export type PipelineRunner = Omit<ScheduledJob, 'cron' | 'catchUp'>;

/** A loaded pipeline run with runPipelineFile, then notified; `command` names the run in its lock. */
export function runnerOf(
  pipeline: LoadedPipeline,
  command: string,
  options: RunnerOptions = {},
): PipelineRunner {
  const env = options.env ?? process.env;
  return {
    name: pipeline.name,
    file: pipeline.file,
    baseUrl: pipeline.connection.base_url ?? env.WDS_BASE_URL,
    run: ({ signal, log }) => runPipelineFile(pipeline, { signal, log, env, command, windowStores: options.windowStores, journals: options.journals }),
    afterRun: async (outcome) => {
      const summary = summaryOf(pipeline, outcome);
      options.onSummary?.(summary);
      await notifyRun(pipeline, summary, options.log);
    },
  };
}

/** A loaded pipeline as the scheduler's job: run with runPipelineFile, then notified. */
export function jobOf(
  pipeline: LoadedPipeline,
  options: RunnerOptions = {},
): ScheduledJob {
  return {
    ...runnerOf(pipeline, `wds-files schedule (${pipeline.name})`, options),
    cron: pipeline.schedule!.cron,
    catchUp: pipeline.schedule!.catch_up,
  };
}

/** `pipelines/` in the working folder when nothing is named. */
export const defaultPaths = (paths: string[] | undefined): string[] => (paths?.length ? paths : ['pipelines']);
