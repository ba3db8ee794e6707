/**
 * The pipeline file format (DESIGN.md section 9), as one zod schema: it validates a file, and
 * `z.toJSONSchema` turns it into the JSON Schema that `wds-files validate --schema` prints. Paths
 * are kept as written here; load.ts resolves them against the pipeline file's folder.
 */
import { Cron } from 'croner';
import { z } from 'zod';
import { STAGES, STAGE_NAMES, type StageName } from '../stages/registry.js';
import { hasRules, retentionPolicySchema } from '../archive/retention.js';
import { objectLockSchema, s3SettingsSchema } from '../archive/bucket/address.js';
import { WEBHOOK_EVENTS } from '../spec/events.js';
import { parseDuration } from '../util/duration.js';

const path = z.string().min(1, 'must name a path');
const id = z.int().positive();

/** Croner takes 7 fields too (with a year); the format promises 5 or 6. */
export function cronProblem(pattern: string): string | null {
  const fields = pattern.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `a cron pattern has 5 fields (minute hour day month weekday) or 6 (seconds first), not ${fields}: "${pattern}"`;
  try {
    new Cron(pattern, { paused: true });
    return null;
  } catch (error) {
    return `not a valid cron pattern "${pattern}": ${(error as Error).message.replace(/^CronPattern:\s*/, '')}`;
  }
}

const cron = z.string().superRefine((value, ctx) => {
  const problem = cronProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
}).describe('A cron pattern of 5 fields, or 6 with seconds first, in the service\'s local time');

export const scheduleSchema = z.union([
  cron,
  z.strictObject({
    cron,
    catch_up: z.enum(['once', 'skip']).optional().describe('A run missed while the scheduler was down: run it once (default), or skip it'),
  }),
]).describe('When `wds-files schedule` runs the pipeline');

/** The longest debounce: an event's pipeline should run within the hour, or a schedule serves better. */
export const MAX_DEBOUNCE_MS = 3_600_000;

export const onSchema = z.array(z.enum(WEBHOOK_EVENTS, { error: `must be a member event: ${WEBHOOK_EVENTS.join(', ')}` }))
  .min(1, `name at least one member event: ${WEBHOOK_EVENTS.join(', ')}`)
  .refine((events) => new Set(events).size === events.length, 'names an event twice')
  .describe('Member events after which `wds-files webhook serve --pipelines` runs the pipeline');

export const debounceSchema = z.union([
  z.number().min(0, 'must be 0 or more seconds'),
  z.string().superRefine((text, ctx) => {
    if (parseDuration(text) === null) ctx.addIssue({ code: 'custom', message: `must be a duration such as 30s, 2m or 1m30s, not "${text}"` });
  }),
]).refine((value) => (typeof value === 'number' ? value * 1000 : parseDuration(value) ?? 0) <= MAX_DEBOUNCE_MS, 'must be at most 1h')
  .describe('With `on`: the run starts this long after the first event it answers (a duration such as 30s, or seconds), taking every event until then with it (default 30s)');

export const connectionSchema = z.strictObject({
  base_url: z.string().min(1).optional().describe('Default: WDS_BASE_URL'),
  consumer_key: z.string().min(1).optional().describe('Default: WDS_CONSUMER_KEY'),
  consumer_secret: z.string().min(1).optional().describe('Default: WDS_CONSUMER_SECRET; write ${WDS_CONSUMER_SECRET}, never the secret itself'),
  consumer_secret_file: path.optional().describe('A file whose first line is the consumer secret (a systemd credential, a Docker secret), instead of consumer_secret; relative to the pipeline file'),
}).describe('Where the service is; every key defaults to its WDS_* variable');

const moveSchema = z.strictObject({
  done: path.describe('Files the service took (or already held) are moved here'),
  refused: path.describe('Files refused are moved here, each with <name>.reason.txt beside it'),
}).describe('After a run, move each file of the folder whose fate is settled; files that failed or whose fate is unknown stay for the next run');

export const fromSchema = z.union([
  z.strictObject({ service: z.literal('photos') }),
  z.strictObject({
    service: z.literal('attachments'),
    sheets: z.array(id).min(1).optional().describe('Only these sheets; default: every sheet with a file part'),
    fields: z.array(id).min(1).max(1, 'one file part per pipeline: name one, or leave `fields` out for every file part of the sheet').optional(),
  }),
  z.strictObject({
    folder: path,
    move: moveSchema.optional(),
    settle_seconds: z.int().min(0).optional().describe('Files changed less than this many seconds ago are left for the next run, as they may still be being copied in (default 10 with move, else 0)'),
  }),
  z.strictObject({ zip: path }),
  z.strictObject({ csv: path }),
]).describe('Where the files come from: the service, or a folder, zip or CSV manifest (code,path[,file_name]) to import');

export const toSchema = z.union([
  z.strictObject({
    archive: path.describe('A snapshot archive folder, or s3://BUCKET/PREFIX for one in an S3 bucket'),
    s3: s3SettingsSchema.optional(),
    lock: objectLockSchema.optional(),
    max_delete: z.union([
      z.int().min(0, 'must be 0 or more'),
      z.string().regex(/^(100|[1-9]?\d)%$/, 'must be a count of files or a share from 0% to 100%'),
    ]).optional().describe('A run that finds more of the previous snapshot\'s files deleted than this (a count, or a share such as 50%, the default) keeps its snapshot out of latest and retention and exits 3; 100% allows any'),
  }),
  z.strictObject({ folder: path }),
  z.strictObject({ zip: path.regex(/\.zip$/i, 'a zip destination is a file name ending in .zip') }),
  z.strictObject({ service: z.literal('photos'), mode: z.enum(['upsert', 'register', 'update']).optional() }),
  z.strictObject({ service: z.literal('attachments'), mode: z.enum(['upsert', 'add', 'replace']).optional(), sheet: id.optional(), field: id.optional() }),
]).describe('Where the files go: an archive, a folder, a zip, or the service');

/**
 * A step names one stage of the registry (src/stages/registry.ts) with its options: the stages,
 * their docs and their defaults come from there, so the file format and the pipelines agree.
 */
const stepSchema = z.strictObject(
  Object.fromEntries(STAGE_NAMES.map((name) => [name, STAGES[name].options.describe(STAGES[name].describe).optional()])) as {
    [N in StageName]: z.ZodOptional<(typeof STAGES)[N]['options']>
  },
).refine((step) => Object.keys(step).length === 1, 'a step names one stage: `- download: {concurrency: 8}`')
  .describe('One stage and its options: export stages list, plan, download, sink; import stages read, dedupe, route, check, normalize, batch, submit, report');

export const retentionSchema = retentionPolicySchema
  .refine(hasRules, 'name at least one keep_* rule above 0; with none, every snapshot but the newest complete one would be removed')
  .describe('Archives only: which complete snapshots to keep after a run (keep_last, keep_daily, keep_weekly, keep_monthly, keep_yearly); the newest complete one always stays');

export const notifySchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }),
  on: z.array(z.enum(['success', 'partial', 'failure'])).min(1).optional().describe('Default: [failure, partial]'),
}).describe('POSTs the run summary as JSON when the run ends as `on` says');

export const pipelineSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a name of letters, digits, dots, dashes and underscores').describe('Unique; names the lock, the report and the notifications'),
  connection: connectionSchema.optional(),
  schedule: scheduleSchema.optional(),
  on: onSchema.optional(),
  debounce: debounceSchema.optional(),
  from: fromSchema,
  steps: z.array(stepSchema).optional().describe('The stages whose options differ from their defaults; every stage of the direction runs, in its order, whether named or not'),
  to: toSchema,
  retention: retentionSchema.optional(),
  notify: notifySchema.optional(),
}).describe('A wds-files pipeline file. Relative paths are taken from the folder the pipeline file is in.');

export type PipelineInput = z.infer<typeof pipelineSchema>;

/** The JSON Schema of a pipeline file (`wds-files validate --schema`). */
export function pipelineJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://github.com/wds-files/wds-files/pipeline-file.schema.json',
    title: 'wds-files pipeline file',
    ...z.toJSONSchema(pipelineSchema, { target: 'draft-2020-12', io: 'input' }),
  };
}
