/**
 * `--force` and `--wait-lock`, the options of the commands that write a folder or a zip. Apart from
 * src/cli/preflight.ts so that defining a command's options loads none of the locking code.
 */
import type { Argv } from 'yargs';
import { UsageError } from './connection.js';
import { parseDuration } from '../util/duration.js';

export interface TargetArgs {
  force?: boolean;
  'wait-lock'?: string;
}

/** `--force` and `--wait-lock` of the commands that write a folder or a zip. */
export function withTargetOptions<T>(yargs: Argv<T>): Argv<T & TargetArgs> {
  return yargs
    .option('force', { type: 'boolean', default: false, describe: 'Write into a folder of other files that is no export folder, or replace a file named *.zip that is not a zip archive' })
    .option('wait-lock', { type: 'string', describe: 'If another run is writing the same target, wait for it up to DURATION (30s, 5m, 1h) instead of refusing' })
    .check((argv) => {
      const wait = argv['wait-lock'];
      if (wait !== undefined && parseDuration(String(wait)) === null) throw new UsageError(`--wait-lock must be a duration such as 30s, 5m or 1h, got "${wait}"`);
      return true;
    }) as unknown as Argv<T & TargetArgs>;
}
