/** Reading a pipeline file for `plan` and `run`: its problems printed as validate prints them, exit 2. */
import type { LoadedPipeline } from '../../pipeline-files/load.js';
import type { Place } from '../path-clash.js';
import { sayError } from '../log.js';
import { UsageError } from '../connection.js';

export async function loadOrExit(file: string): Promise<LoadedPipeline> {
  // The YAML reader and the format's schemas load with the first pipeline file, not at start.
  const { PipelineFileError, loadPipelineFile } = await import('../../pipeline-files/load.js');
  try {
    return await loadPipelineFile(file);
  } catch (error) {
    if (!(error instanceof PipelineFileError)) throw error;
    for (const p of error.problems) sayError(`${p.file}:${p.line}:${p.column}: ${p.message}`);
    // A usage error (exit 2), said last by main.ts once the command's JSON line is out.
    throw new UsageError(`${file} has ${error.problems.length} problem${error.problems.length === 1 ? '' : 's'}; nothing was done`);
  }
}

/** What a run of the pipeline reads and writes: places its `--report` may not be (src/cli/path-clash.ts). */
export function pipelinePlaces(pipeline: LoadedPipeline): Place[] {
  const { from, to } = pipeline;
  return [
    ...('archive' in to ? [{ path: to.archive, folder: true, what: 'to.archive' }] : 'folder' in to ? [{ path: to.folder, folder: true, what: 'to.folder' }] : 'zip' in to ? [{ path: to.zip, folder: false, what: 'to.zip' }] : []),
    ...('folder' in from ? [{ path: from.folder, folder: true, what: 'from.folder' }] : 'zip' in from ? [{ path: from.zip, folder: false, what: 'from.zip' }] : 'csv' in from ? [{ path: from.csv, folder: false, what: 'from.csv' }] : []),
  ];
}
