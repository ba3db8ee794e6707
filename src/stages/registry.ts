/**
 * The stage registry (DESIGN.md sections 2 and 9): every stage of the four pipelines, in the order
 * it runs, with its direction and its options as one zod schema. An import's dedupe and route
 * run on the files' names, before check reads any bytes: duplicates and unknown members are
 * never read, and each batch can be sent as soon as it is checked. The same schema validates a
 * pipeline file's `steps` (and gives `validate --schema` its docs and defaults) and the options a
 * pipeline takes, so an option is declared once. Only zod (and leaf modules of constants) is
 * imported here: the CLI loads this to validate a file without loading any pipeline.
 */
import { z } from 'zod';
import { isValidDate } from '../spec/time.js';
import { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY } from '../util/pacing.js';

/** A stage that has no options of its own still declares that, so `steps` can name it. */
const none = z.strictObject({});

export const EXPORT_STAGES = {
  list: {
    describe: 'Export: list the files at the service (photos, or the file parts of sheets)',
    options: z.strictObject({
      since: z.string().refine(isValidDate, 'must be a date YYYY-MM-DD').optional()
        .describe('Only files updated on or after this date (YYYY-MM-DD); default: every file'),
    }),
  },
  plan: {
    describe: 'Export: decide per listed file what to do: keep a file the target already holds, link one unchanged since the last snapshot, or download it',
    options: none,
  },
  download: {
    describe: 'Export: download the files to fetch from their signed URLs, resuming cut transfers',
    options: z.strictObject({
      concurrency: z.int().min(1).max(256).optional()
        .describe(`Downloads at once; default ${PHOTO_EXPORT_CONCURRENCY} for photos, ${DEFAULT_EXPORT_CONCURRENCY} for attachments`),
    }),
  },
  sink: {
    describe: 'Export: write each file to the folder, zip or snapshot, then the manifest',
    options: none,
  },
} as const;

export const IMPORT_STAGES = {
  read: {
    describe: 'Import: enumerate the files of the folder, zip or CSV by name and size, refusing unsafe entries (no bytes read yet)',
    options: none,
  },
  dedupe: {
    describe: 'Import: two files for one member (photos) or one name twice for one member (attachments) are conflicts, found from the names before any is sent',
    options: none,
  },
  route: {
    describe: 'Import: from one listing of members and files, each file goes as a register (new) or an update (replacing), as `to.mode` allows; unknown members are refused from their names, and a file whose very bytes an earlier run applied is skipped once read',
    options: none,
  },
  check: {
    describe: 'Import: read each file and check it against the service\'s rules (extension, real type, 5 MB), in the order of the batches, while the requests before are sent',
    options: z.strictObject({
      concurrency: z.int().min(1).max(16).default(2)
        .describe('Files checked at once (photos in the photo checker\'s process); the checks run at most a few batches ahead of the requests'),
    }),
  },
  normalize: {
    describe: 'Import, photos: convert what the service would refuse (HEIC, WebP, TIFF, BMP, AVIF, over 5 MB, rotated) to JPEG, applying EXIF rotation and dropping location data',
    options: z.strictObject({
      convert: z.boolean().default(true)
        .describe('Convert such photos; false refuses them instead (the CLI\'s --no-normalize)'),
    }),
  },
  batch: {
    describe: 'Import: pack the checked files into as few requests as the limits allow (100 photos or 1,000 files, and 250 MB of body, per request)',
    options: none,
  },
  submit: {
    describe: 'Import: send each request as soon as its batch is checked, within 5 update requests a minute, and follow its task to the end',
    options: z.strictObject({
      trim: z.boolean().default(true).describe('Photos: let the service trim each photo to the face'),
      dry_run: z.boolean().default(false).describe('Send with Dry-Run: 1: every check, no change'),
    }),
  },
  report: {
    describe: 'Import: each file\'s outcome and why, and the journal\'s note of what the listing shows for the files applied',
    options: none,
  },
} as const;

export const STAGES = { ...EXPORT_STAGES, ...IMPORT_STAGES } as const;

export type ExportStageName = keyof typeof EXPORT_STAGES;
export type ImportStageName = keyof typeof IMPORT_STAGES;
export type StageName = keyof typeof STAGES;

/** Each direction's stages in the order they run. */
export const EXPORT_STAGE_NAMES = Object.keys(EXPORT_STAGES) as ExportStageName[];
export const IMPORT_STAGE_NAMES = Object.keys(IMPORT_STAGES) as ImportStageName[];
export const STAGE_NAMES = [...EXPORT_STAGE_NAMES, ...IMPORT_STAGE_NAMES] as StageName[];

/** A stage's options as given (each may be left out). */
export type StageInput<N extends StageName> = z.input<(typeof STAGES)[N]['options']>;
/** A stage's options with their defaults filled in. */
export type StageOptions<N extends StageName> = z.output<(typeof STAGES)[N]['options']>;

/**
 * A stage's options checked against its schema, defaults filled in; an option out of range is an
 * error naming the stage, the option and the rule. `where` names what gave them (the pipeline).
 */
export function stageOptions<N extends StageName>(name: N, input: StageInput<N> | undefined, where: string): StageOptions<N> {
  // Options left undefined are absent: a caller passes `{ concurrency: options.concurrency }`.
  const given = Object.fromEntries(Object.entries(input ?? {}).filter(([, v]) => v !== undefined));
  const parsed = STAGES[name].options.safeParse(given);
  if (parsed.success) return parsed.data as StageOptions<N>;
  const problems = parsed.error.issues.map((issue) => {
    const said = issue.message.replace(/^Too small: expected number to be >=(\S+)$/, 'must be at least $1').replace(/^Too big: expected number to be <=(\S+)$/, 'must be at most $1');
    return `${[name, ...issue.path.map(String)].join('.')}: ${said}`;
  });
  throw new RangeError(`${where}: ${problems.join('; ')}`);
}
