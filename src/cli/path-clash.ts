/**
 * A command's own output files (`--report`, `--log-file`) must not be a place it reads or writes:
 * a report written over the zip it describes, or into the folder an import reads, destroyed the
 * export or became a file of the next import. Only node:path here: main.ts checks `--log-file`
 * with it before any command loads.
 */
import { isAbsolute, relative, resolve } from 'node:path';

/** A place the command reads or writes: a folder (anything under it is its), or a file. */
export interface Place {
  path: string;
  folder: boolean;
  /** What it is, for the message: `the export`, `the import source`. */
  what: string;
}

/** Why `file` may not be written as the command's own output, or null. */
export function clashProblem(file: string, places: Place[]): string | null {
  const at = resolve(file);
  for (const place of places) {
    const target = resolve(place.path);
    if (at === target) return `is ${place.what} itself, which it would replace; name another file`;
    if (place.folder) {
      const rel = relative(target, at);
      if (rel && !rel.startsWith('..') && !isAbsolute(rel)) return `is inside ${place.what} ${place.path}, among the files it holds; name a file outside it`;
    } else if (at === `${target}.lock` || at.startsWith(`${target}.partial`)) {
      return `is a file ${place.what} ${place.path} keeps beside it; name another file`;
    }
  }
  return null;
}
