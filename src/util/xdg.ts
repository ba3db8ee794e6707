/**
 * wds-files' own folders under the user's XDG base directories: one definition for the limit
 * windows, the code cache, the tokens kept and the import journals.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** `$XDG_CACHE_HOME/wds-files` (default `~/.cache/wds-files`): what can be lost and made again. */
export function cacheFolder(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'wds-files');
}

/** `$XDG_STATE_HOME/wds-files` (default `~/.local/state/wds-files`): what a later run needs. */
export function stateFolder(): string {
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'wds-files');
}
