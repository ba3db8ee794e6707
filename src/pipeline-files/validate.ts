/**
 * `wds-files validate`: every problem of each file at its line and column, names unique across
 * the files given, and with `online` what the service must hold for the files to run: the sheets
 * and file parts they name, and the members their sources' files are for.
 */
import { PipelineFileError, loadPipelineFile, locate, type LoadedPipeline, type PipelineProblem } from './load.js';
import type { EmbeddedService } from './connection.js';
import type { WindowStores } from '../client/window-store.js';

export interface ValidateOptions {
  env?: NodeJS.ProcessEnv;
  online?: boolean;
  /** Online checks with no base URL run against this (the CLI's embedded emulator). */
  embedded?: EmbeddedService;
  log?: (line: string) => void;
  /** Where the company's limit windows are shared with other machines (the fleet's database). */
  windowStores?: WindowStores;
}

/** Members a source names that the service lacks, listed at most this many at once. */
const MISSING_SHOWN = 10;

export async function validatePipelineFiles(files: string[], options: ValidateOptions = {}): Promise<{ problems: PipelineProblem[]; pipelines: LoadedPipeline[] }> {
  const problems: PipelineProblem[] = [];
  const pipelines: { pipeline: LoadedPipeline; shown: string }[] = [];
  for (const shown of files) {
    try {
      pipelines.push({ pipeline: await loadPipelineFile(shown, options.env), shown });
    } catch (error) {
      if (!(error instanceof PipelineFileError)) throw error;
      problems.push(...error.problems);
    }
  }
  const names = new Map<string, string>();
  for (const { pipeline, shown } of pipelines) {
    const first = names.get(pipeline.name);
    if (first) problems.push(await locate(pipeline.file, shown, ['name'], `name: "${pipeline.name}" is also the name of ${first}; a name is the pipeline's lock, report and notifications, so each must be unique`));
    else names.set(pipeline.name, shown);
  }
  // One archive, one pipeline: its retention and its unchanged files are counted per archive.
  const archives = new Map<string, string>();
  for (const { pipeline, shown } of pipelines) {
    if (!('archive' in pipeline.to)) continue;
    const first = archives.get(pipeline.to.archive);
    if (first) problems.push(await locate(pipeline.file, shown, ['to', 'archive'], `to.archive ${pipeline.to.archive} is also the archive of ${first}; each pipeline needs an archive of its own (retention would remove the other pipeline's snapshots)`));
    else archives.set(pipeline.to.archive, shown);
  }
  if (options.online) {
    for (const { pipeline, shown } of pipelines) problems.push(...(await onlineProblems(pipeline, shown, options)));
  }
  return { problems, pipelines: pipelines.map((p) => p.pipeline) };
}

async function onlineProblems(pipeline: LoadedPipeline, shown: string, options: ValidateOptions): Promise<PipelineProblem[]> {
  // The client and the listing load here: checking files offline makes no request and needs neither.
  const [{ connectPipeline }, { UnknownTargetError, attachmentTargets }] = await Promise.all([import('./connection.js'), import('../stages/export/list-urls.js')]);
  const problems: PipelineProblem[] = [];
  let connection;
  try {
    connection = await connectPipeline(pipeline, { env: options.env, embedded: options.embedded, log: options.log, windowStores: options.windowStores });
  } catch (error) {
    return [await locate(pipeline.file, shown, ['connection'], (error as Error).message)];
  }
  try {
    const { client } = connection;
    const { from, to } = pipeline;
    const target = async (only: { sheet?: number; field?: number }, path: (string | number)[]): Promise<void> => {
      if (only.sheet === undefined) return;
      try {
        await attachmentTargets(client, only);
      } catch (error) {
        if (!(error instanceof UnknownTargetError)) throw error;
        problems.push(await locate(pipeline.file, shown, path, error.message));
      }
    };
    if ('service' in from && from.service === 'attachments') {
      for (const [at, sheet] of (from.sheets ?? []).entries()) await target({ sheet, field: from.field }, from.field !== undefined ? ['from', 'fields', 0] : ['from', 'sheets', at]);
    }
    if ('service' in to && to.service === 'attachments') await target({ sheet: to.sheet, field: to.field }, to.field !== undefined ? ['to', 'field'] : ['to', 'sheet']);
    if (!('service' in from)) {
      // The members' codes are asked for first, so that the source is read once and only the
      // files naming no member are kept (those shown, and a count of the others). A source that
      // cannot be read (an export holding nothing for this import) is a problem of `from`.
      const members = await memberCodes(client);
      const missing: { code: string; where: string }[] = [];
      let more = 0;
      const read = await sourceCodes(pipeline, (code, where) => {
        if (members.has(code)) return;
        if (missing.length < MISSING_SHOWN) missing.push({ code, where });
        else more += 1;
      }).then(() => null, (error: unknown) => (error as Error).message);
      if (read !== null) problems.push(await locate(pipeline.file, shown, ['from'], read));
      else if (missing.length) {
        const list = missing.map((m) => `${m.code} (${m.where})`).join(', ');
        problems.push(await locate(pipeline.file, shown, ['from'], `the source names members the service does not have: ${list}${more > 0 ? ` and ${more} more` : ''}`));
      }
    }
  } catch (error) {
    problems.push(await locate(pipeline.file, shown, ['connection'], `the service could not be asked: ${(error as Error).message}`));
  } finally {
    await connection.close();
  }
  return problems;
}

/** Gives `onFile` the member code of each file of the source the pipeline imports. */
async function sourceCodes(pipeline: LoadedPipeline, onFile: (code: string, where: string) => void): Promise<void> {
  const { from } = pipeline;
  if ('service' in from) return;
  const [{ codeFromName }, { openPipelineSource }] = await Promise.all([import('../pipelines/photo-import.js'), import('./move.js')]);
  const photos = 'service' in pipeline.to && pipeline.to.service === 'photos';
  // As the run reads it: a drop folder not made yet holds nothing to check.
  const source = await openPipelineSource(from, { make: false, log: () => undefined });
  try {
    // An export's files for the other kind of import, or another sheet or field, are not this run's.
    const want = 'service' in pipeline.to && pipeline.to.service === 'attachments'
      ? { kind: 'attachment' as const, sheetId: pipeline.to.sheet, fieldId: pipeline.to.field }
      : { kind: photos ? 'photo' as const : 'attachment' as const };
    for await (const entry of source.entries(want)) {
      if (entry.kind !== 'file') continue;
      const file = entry.file;
      // Attachments laid out <code>/<file> name the member by their folder.
      const code = file.code ?? (photos ? codeFromName(file.relPath) : file.relPath.split('/')[0]!);
      onFile(code, file.relPath);
    }
  } finally {
    await source.close();
  }
}

/** Every member's code, read entry by entry: the codes are kept, not the answer (13 MB of text at 10,000 members). */
async function memberCodes(client: import('../client/client.js').WdsClient): Promise<Set<string>> {
  const codes = new Set<string>();
  await client.members.each((member) => codes.add(member.code));
  return codes;
}
