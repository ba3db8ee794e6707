/** Reading a pipeline file for `plan` and `run`: its problems printed as validate prints them, exit 2. */
import type { LoadedPipeline } from '../../pipeline-files/load.js';
import { sayError } from '../log.js';
import { EXIT } from '../exit-codes.js';

export async function loadOrExit(file: string): Promise<LoadedPipeline> {
  // The YAML reader and the format's schemas load with the first pipeline file, not at start.
  const { PipelineFileError, loadPipelineFile } = await import('../../pipeline-files/load.js');
  try {
    return await loadPipelineFile(file);
  } catch (error) {
    if (!(error instanceof PipelineFileError)) throw error;
    for (const p of error.problems) sayError(`${p.file}:${p.line}:${p.column}: ${p.message}`);
    sayError(`wds-files: ${file} has ${error.problems.length} problem${error.problems.length === 1 ? '' : 's'}; nothing was done`);
    process.exit(EXIT.usage);
  }
}
