/**
 * What the scheduler remembers of each pipeline between starts, in
 * `$XDG_STATE_HOME/wds-files/schedule/<name>.json`: up to which due time it has dealt with (so a
 * restart finds the runs missed while the machine slept or the scheduler was down), the last run,
 * and the last run that went to its end (so neither a restart nor a run cut short by a stop turns
 * a failing pipeline healthy). Written atomically.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { stateFolder } from '../util/xdg.js';

const lastRunSchema = z.object({
  status: z.enum(['ok', 'partial', 'failed', 'interrupted']),
  started_at: z.string(),
  finished_at: z.string(),
  duration_ms: z.number(),
  files: z.number(),
  bytes: z.number(),
  error: z.string().optional(),
});

export const pipelineStateSchema = z.object({
  pipeline: z.string(),
  /** ISO time up to which every due time was run, skipped on purpose, or found missed. */
  handled_until: z.string(),
  /** The last run, also one cut short by the scheduler's stop (`interrupted`). */
  last_run: lastRunSchema.optional(),
  /**
   * The last run that went to its end (ok, partial or failed): what /healthz judges. A run cut
   * short later tells nothing of the pipeline's health, so it leaves this as it was.
   */
  last_completed_run: lastRunSchema.optional(),
  /** ISO time of the last run that ended ok or partial. */
  last_success_at: z.string().optional(),
});
export type PipelineState = z.infer<typeof pipelineStateSchema>;
export type LastRun = z.infer<typeof lastRunSchema>;

/** `$XDG_STATE_HOME/wds-files/schedule`. */
export const scheduleStateFolder = (): string => join(stateFolder(), 'schedule');

/** A pipeline name as a file name: names are free text in pipeline files. */
const fileNameOf = (pipeline: string): string => `${pipeline.replace(/[^A-Za-z0-9._-]/g, '_')}.json`;

export class ScheduleState {
  constructor(readonly folder: string = scheduleStateFolder()) {}

  pathOf(pipeline: string): string {
    return join(this.folder, fileNameOf(pipeline));
  }

  /** The saved state, or null when there is none or it cannot be read (it is then started afresh). */
  async read(pipeline: string): Promise<PipelineState | null> {
    let text: string;
    try {
      text = await readFile(this.pathOf(pipeline), 'utf8');
    } catch {
      return null;
    }
    try {
      const parsed = pipelineStateSchema.safeParse(JSON.parse(text));
      if (!parsed.success || parsed.data.pipeline !== pipeline) return null;
      const state = parsed.data;
      // A state written before last_completed_run was kept: its last run says it, unless it was cut short.
      if (!state.last_completed_run && state.last_run && state.last_run.status !== 'interrupted') state.last_completed_run = state.last_run;
      return state;
    } catch {
      return null;
    }
  }

  async write(state: PipelineState): Promise<void> {
    await mkdir(this.folder, { recursive: true });
    const path = this.pathOf(state.pipeline);
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`);
    await rename(temporary, path);
  }
}
