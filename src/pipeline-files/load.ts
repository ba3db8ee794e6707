/**
 * Reads a pipeline file: YAML, then `${VAR}` and `${VAR:-default}` in its values, then the schema
 * (schema.ts) and the rules between its parts. Every problem is reported at its line and column,
 * taken from the YAML document's nodes, so `wds-files validate` can print `FILE:LINE:COLUMN`.
 */
import { isBucketAddress, parseBucketAddress, type ObjectLock, type S3Settings } from '../archive/bucket/address.js';
import { readFile } from 'node:fs/promises';
import { dirname, relative, resolve, isAbsolute } from 'node:path';
import { LineCounter, isMap, parse as parseYaml, parseDocument, visit, type Document } from 'yaml';
import { fieldPath, flattenIssues, issueMessage, openYaml, placeOf, syntaxProblem, type FileProblem, type Issue, type YamlPath } from '../util/yaml-places.js';
import { pipelineSchema, type PipelineInput } from './schema.js';
import type { WebhookEvent } from '../spec/events.js';
import { parseDuration } from '../util/duration.js';
import { EXPORT_STAGE_NAMES, IMPORT_STAGE_NAMES, STAGE_NAMES, stageOptions, type StageName, type StageOptions } from '../stages/registry.js';

/** One problem of a pipeline file, at its place. */
export type PipelineProblem = FileProblem;

/** A pipeline file that cannot be run, with each of its problems. */
export class PipelineFileError extends Error {
  constructor(readonly problems: PipelineProblem[]) {
    super(problems.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`).join('\n'));
    this.name = 'PipelineFileError';
  }
}

export type PipelineFrom =
  | { service: 'photos' }
  | { service: 'attachments'; sheets?: number[]; field?: number }
  | { folder: string; move?: { done: string; refused: string }; settle_seconds: number }
  | { zip: string }
  | { csv: string };

export type PipelineTo =
  | { archive: string; max_delete?: number | `${number}%`; s3?: S3Settings; lock?: ObjectLock }
  | { folder: string }
  | { zip: string }
  | { service: 'photos'; mode?: 'upsert' | 'register' | 'update' }
  | { service: 'attachments'; mode?: 'upsert' | 'add' | 'replace'; sheet?: number; field?: number };

/** The options of each stage a file names, its defaults filled in. */
export type StepOptions = { [N in StageName]: StageOptions<N> };

/** A pipeline file read and checked, its paths absolute. */
export interface LoadedPipeline {
  /** The pipeline file, absolute. */
  file: string;
  name: string;
  schedule?: { cron: string; catch_up: 'once' | 'skip' };
  /** The member events that start it under `webhook serve --pipelines`, and how long it waits for more. */
  on?: { events: WebhookEvent[]; debounce_ms: number };
  notify?: { url: string; on: ('success' | 'partial' | 'failure')[] };
  /** As the file gives it; the run takes what is missing from WDS_BASE_URL, WDS_CONSUMER_KEY, WDS_CONSUMER_SECRET. */
  connection: { base_url?: string; consumer_key?: string; consumer_secret?: string; consumer_secret_file?: string };
  from: PipelineFrom;
  to: PipelineTo;
  /** The options of every stage: as the file names them, else their defaults. */
  steps: StepOptions;
  retention?: { keep_last?: number; keep_daily?: number; keep_weekly?: number; keep_monthly?: number; keep_yearly?: number };
}

type Path = YamlPath;

/** A drop folder leaves files this recent for the next run: a copy into it may still be under way. */
export const DROP_SETTLE_SECONDS = 10;
/** A pipeline run by events starts this long after the first one, unless `debounce` says otherwise. */
export const DEFAULT_DEBOUNCE_MS = 30_000;
const VARIABLE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** A pipeline file checked, or its problems. */
export async function loadPipelineFile(path: string, env: NodeJS.ProcessEnv = process.env): Promise<LoadedPipeline> {
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new PipelineFileError([{ file: path, line: 1, column: 1, message: code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder, not a pipeline file' : `cannot be read (${code ?? (error as Error).message})` }]);
  }
  return checkPipelineText(text, path, file, env);
}

/** The checks of {@link loadPipelineFile} on the text of `file` (`shown` is how messages name it). */
export function checkPipelineText(text: string, shown: string, file: string, env: NodeJS.ProcessEnv): LoadedPipeline {
  const { doc, lines, problems, at } = openYaml(text, shown);
  // After the first syntax error the parser's view of the rest is guesswork: one message says enough.
  const syntax = syntaxProblem(doc);
  if (syntax) {
    const lineText = text.split('\n')[lines.linePos(syntax.offset).line - 1] ?? '';
    const hint = /[[{][^\n]*\$\{/.test(lineText) ? ' (inside [ ] or { }, quote a ${VAR}: "${VAR}", which stays text; for a number, write the list on lines: "- ${VAR}")' : '';
    at(syntax.offset, `${syntax.message}${hint}`);
    throw new PipelineFileError(problems);
  }
  if (!isMap(doc.contents)) {
    at(doc.contents?.range?.[0] ?? 0, 'a pipeline file is a YAML mapping (name:, from:, to:, ...)');
    throw new PipelineFileError(problems);
  }
  const unset = substituteVariables(doc, env, at);
  const value = doc.toJS() as unknown;
  const parsed = pipelineSchema.safeParse(value);
  if (!parsed.success) {
    for (const issue of flattenIssues(parsed.error.issues)) {
      const place = placeOf(doc, issue);
      // A value left unset is already reported as such; that it is no valid value says nothing more.
      if (unset.some(([start, end]) => place >= start && place < end)) continue;
      at(place, messageOf(issue));
    }
  } else {
    for (const { path, message } of crossChecks(parsed.data, value)) at(placeOf(doc, { path, code: 'custom' }), message);
  }
  if (problems.length) throw new PipelineFileError(dedupe(problems));
  return toLoaded(parsed.data!, file);
}

/**
 * `${VAR}` and `${VAR:-default}` (the default also when VAR is empty, as in a shell); `$$` is a
 * `$`. A plain scalar that is only a substitution is read as YAML again, so `sheet: ${SHEET}`
 * gives a number.
 */
export function substituteVariables(doc: Document, env: NodeJS.ProcessEnv, at: (offset: number, message: string) => void): [number, number][] {
  const unsetRanges: [number, number][] = [];
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || !node.value.includes('$')) return;
      const source = node.value;
      let unset = false;
      const replaced = source.replace(VARIABLE, (match, name: string | undefined, fallback: string | undefined, index: number) => {
        if (match === '$$') return '$';
        const set = env[name!];
        if (set !== undefined && (set !== '' || fallback === undefined)) return set;
        if (fallback !== undefined) return fallback;
        unset = true;
        const plain = node.type === 'PLAIN' || node.type === undefined;
        const offset = (node.range?.[0] ?? 0) + (plain ? index : node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE' ? index + 1 : 0);
        at(offset, `the variable ${name} is not set, and \${${name}} has no default (write \${${name}:-default} for one)`);
        return match;
      });
      if (unset) {
        unsetRanges.push([node.range?.[0] ?? 0, node.range?.[1] ?? 0]);
        return;
      }
      if (node.type === 'PLAIN' && /^\$\{[^}]*\}$/.test(source)) {
        const again = safeYaml(replaced);
        node.value = typeof again === 'number' || typeof again === 'boolean' ? again : replaced;
      } else node.value = replaced;
    },
  });
  return unsetRanges;
}

function safeYaml(text: string): unknown {
  try {
    return parseYaml(text) as unknown;
  } catch {
    return text;
  }
}

function messageOf(issue: Issue): string {
  const keys = issue.keys ?? [];
  if (issue.code === 'unrecognized_keys' && issue.path.length === 2 && issue.path[0] === 'steps') {
    return `unknown step ${keys.map((k) => `"${k}"`).join(', ')}; the steps are ${STAGE_NAMES.join(', ')}`;
  }
  if (issue.code === 'unrecognized_keys' && issue.path.length === 3 && issue.path[0] === 'steps' && issue.path[2] === 'check' && keys.includes('normalize')) {
    return `${fieldPath(issue.path)}.normalize: converting photos is a stage of its own now; write \`- normalize: { convert: true }\` (or false) instead`;
  }
  const text = issueMessage(issue);
  // The usual cause: a `"${VAR}"` quoted inside [ ], which stays text.
  if (typeof issue.path.at(-1) === 'number' && text.endsWith('must be a number, not a string')) return `${text} (a quoted "\${VAR}" stays text; for a number in a list, write the list on lines: "- \${VAR}")`;
  return text;
}

/** The rules between the file's parts, which one part's schema cannot see. */
function crossChecks(p: PipelineInput, raw: unknown): { path: Path; message: string }[] {
  // Options as written: a default filled in by the schema is not something the file said.
  const written = ((raw as { steps?: unknown }).steps ?? []) as Record<string, Record<string, unknown> | undefined>[];
  const problems: { path: Path; message: string }[] = [];
  const fromService = 'service' in p.from;
  const toService = 'service' in p.to;
  if (fromService && toService) problems.push({ path: ['to'], message: 'to: the files come from the service; send them to an archive, a folder or a zip' });
  if (!fromService && !toService) problems.push({ path: ['to'], message: 'to: the files come from a folder, zip or CSV; send them to the service (to: {service: photos} or {service: attachments})' });
  if ('archive' in p.to) {
    const since = (p.steps ?? []).findIndex((step) => step.list?.since !== undefined);
    if (since >= 0) problems.push({ path: ['steps', since, 'list', 'since'], message: `steps[${since}].list.since: a snapshot holds every file; an archive takes no since` });
  }
  for (const kind of ['folder', 'archive'] as const) {
    const dir = (p.to as Record<string, unknown>)[kind];
    if (typeof dir === 'string' && /\.zip$/i.test(dir)) problems.push({ path: ['to', kind], message: `to.${kind}: ${dir} ends in .zip, which names a zip file; write to: { zip: ${dir} } for a zip, or name the folder otherwise` });
  }
  if (p.debounce !== undefined && !p.on) problems.push({ path: ['debounce'], message: 'debounce: only a pipeline run by events has one; add `on: [member_created]` (or another member event), or remove debounce' });
  if ('archive' in p.to && isBucketAddress(p.to.archive)) {
    try {
      parseBucketAddress(p.to.archive);
    } catch (error) {
      problems.push({ path: ['to', 'archive'], message: `to.archive: ${(error as Error).message}` });
    }
  } else if ('archive' in p.to && (p.to.s3 || p.to.lock)) {
    problems.push({ path: ['to', p.to.s3 ? 's3' : 'lock'], message: `to.${p.to.s3 ? 's3' : 'lock'}: only for an archive in a bucket (to: {archive: s3://BUCKET/PREFIX})` });
  }
  if (p.retention && !('archive' in p.to)) problems.push({ path: ['retention'], message: 'retention: only an archive (to: {archive: DIR}) keeps snapshots to retain' });
  if ('service' in p.from && p.from.service === 'attachments' && p.from.fields && !p.from.sheets) problems.push({ path: ['from', 'fields'], message: 'from.fields: name the sheet the file part belongs to in from.sheets' });
  if ('service' in p.from && p.from.service === 'attachments' && p.from.fields && (p.from.sheets?.length ?? 0) > 1) problems.push({ path: ['from', 'fields'], message: 'from.fields: a file part belongs to one sheet; name only its sheet in from.sheets' });
  if ('service' in p.to && p.to.service === 'attachments' && p.to.field !== undefined && p.to.sheet === undefined) problems.push({ path: ['to', 'field'], message: 'to.field: needs to.sheet' });
  const photos = ('service' in p.from && p.from.service === 'photos') || ('service' in p.to && p.to.service === 'photos');
  (p.steps ?? []).forEach((step, i) => {
    for (const name of Object.keys(step) as StageName[]) {
      const allowed: StageName[] = fromService ? EXPORT_STAGE_NAMES : IMPORT_STAGE_NAMES;
      if (!allowed.includes(name)) problems.push({ path: ['steps', i, name], message: `steps[${i}]: "${name}" is not a stage of ${fromService ? 'an export' : 'an import'}; its stages are ${allowed.join(', ')}` });
      if (!photos && name === 'normalize') problems.push({ path: ['steps', i, 'normalize'], message: `steps[${i}].normalize: only photos are converted` });
      if (!photos && name === 'submit' && written[i]?.submit?.trim !== undefined) problems.push({ path: ['steps', i, 'submit', 'trim'], message: `steps[${i}].submit.trim: only photos are trimmed` });
    }
  });
  if ('folder' in p.from && p.from.move) {
    for (const key of ['done', 'refused'] as const) {
      const inside = relative(p.from.folder, p.from.move[key]);
      if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside))) {
        problems.push({ path: ['from', 'move', key], message: `from.move.${key}: must be outside the folder read (${p.from.folder}), or its files would be read again` });
      }
    }
  }
  return problems;
}

function dedupe(problems: PipelineProblem[]): PipelineProblem[] {
  const seen = new Set<string>();
  // A step with an unknown stage also fails "names one stage" when it names two: the first says enough.
  const unknownAt = new Set(problems.filter((p) => p.message.startsWith('unknown step')).map((p) => p.line));
  return problems
    .filter((p) => !(p.message.includes('a step names one stage') && unknownAt.has(p.line)))
    .filter((p) => {
      const key = `${p.line}:${p.column}:${p.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => a.line - b.line || a.column - b.column);
}

function toLoaded(p: PipelineInput, file: string): LoadedPipeline {
  const dir = dirname(file);
  const abs = (path: string): string => resolve(dir, path);
  let from: PipelineFrom;
  if ('service' in p.from) {
    from = p.from.service === 'photos' ? { service: 'photos' } : { service: 'attachments', sheets: p.from.sheets, field: p.from.fields?.[0] };
  } else if ('folder' in p.from) {
    from = {
      folder: abs(p.from.folder),
      ...(p.from.move ? { move: { done: abs(p.from.move.done), refused: abs(p.from.move.refused) } } : {}),
      settle_seconds: p.from.settle_seconds ?? (p.from.move ? DROP_SETTLE_SECONDS : 0),
    };
  } else if ('zip' in p.from) from = { zip: abs(p.from.zip) };
  else from = { csv: abs(p.from.csv) };
  let to: PipelineTo;
  if ('archive' in p.to) {
    // A bucket archive's address is no path: it is taken as written.
    to = {
      archive: isBucketAddress(p.to.archive) ? p.to.archive : abs(p.to.archive), ...(p.to.max_delete !== undefined ? { max_delete: p.to.max_delete as number | `${number}%` } : {}),
      ...(p.to.s3 ? { s3: p.to.s3 } : {}), ...(p.to.lock ? { lock: p.to.lock } : {}),
    };
  }
  else if ('folder' in p.to) to = { folder: abs(p.to.folder) };
  else if ('zip' in p.to) to = { zip: abs(p.to.zip) };
  else to = p.to;
  const named: Partial<Record<StageName, unknown>> = {};
  for (const step of p.steps ?? []) Object.assign(named, step);
  // Every stage with its options: those the file names, and the defaults of the others.
  const steps = Object.fromEntries(STAGE_NAMES.map((name) => [name, stageOptions(name, named[name] as never, file)])) as StepOptions;
  const schedule = p.schedule === undefined ? undefined
    : typeof p.schedule === 'string' ? { cron: p.schedule, catch_up: 'once' as const }
    : { cron: p.schedule.cron, catch_up: p.schedule.catch_up ?? 'once' };
  const debounceMs = p.debounce === undefined ? DEFAULT_DEBOUNCE_MS : typeof p.debounce === 'number' ? Math.round(p.debounce * 1000) : parseDuration(p.debounce)!;
  return {
    file,
    name: p.name,
    ...(schedule ? { schedule } : {}),
    ...(p.on ? { on: { events: p.on, debounce_ms: debounceMs } } : {}),
    ...(p.notify ? { notify: { url: p.notify.url, on: p.notify.on ?? ['failure', 'partial'] } } : {}),
    connection: p.connection?.consumer_secret_file ? { ...p.connection, consumer_secret_file: abs(p.connection.consumer_secret_file) } : p.connection ?? {},
    from,
    to,
    steps,
    ...(p.retention ? { retention: p.retention } : {}),
  };
}

/** Where `path` is in the pipeline file `file` (its value, or the nearest key above it that is there). */
export async function locate(file: string, shown: string, path: Path, message: string): Promise<PipelineProblem> {
  const lines = new LineCounter();
  const doc = parseDocument(await readFile(file, 'utf8'), { lineCounter: lines });
  const { line, col } = lines.linePos(placeOf(doc, { code: 'custom', path }));
  return { file: shown, line, column: col, message };
}
