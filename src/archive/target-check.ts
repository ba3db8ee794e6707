/**
 * What an export's target must be before anything is made there, checked alike by the SDK's
 * runExport, the CLI and pipeline runs: each only names the target and the way to force it its own
 * way. The modules it reads are loaded only when it runs, so that defining a command loads none.
 */
import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

export interface TargetRules {
  kind: 'folder' | 'zip' | 'archive';
  /** The target as the message names it: `--out X`, `to.zip X`, or the path itself. */
  shown: string;
  /** A folder or zip that is no earlier export may be written all the same. */
  force?: boolean;
  /** How the user asks for that, ending the refusal (`add --force`); a caller without the option gives none. */
  forceHow?: string;
}

/**
 * Why an export may not write `out`, or null when it may: it is inside a snapshot archive (an
 * archive inside another), it is a file where a folder is needed or the reverse, or it holds the
 * user's own files (a folder with no manifest, a file that is no export zip) and `force` is unset.
 */
export async function exportTargetProblem(out: string, rules: TargetRules): Promise<string | null> {
  const { kind, shown } = rules;
  // `x.zip/` is a folder to the checks and a zip once resolved: refused rather than guessed.
  if (/\.zip[\\/]+$/i.test(out)) return `${shown} ends in .zip and a slash: name the zip file without the slash, or a folder whose name does not end in .zip`;
  const { archiveHolding, insideArchiveProblem } = await import('./store.js');
  if (kind === 'archive') {
    const outer = await archiveHolding(dirname(resolve(out)));
    if (outer) return `${shown} is inside the snapshot archive ${outer}, which holds only what its runs write. Name a folder outside it`;
  } else {
    const inside = await insideArchiveProblem(out, kind === 'zip', shown);
    if (inside) return inside;
  }
  const target = resolve(out);
  const info = await stat(target).catch(() => null);
  if (!info) return null;
  if (kind === 'zip' && info.isDirectory()) return `${shown} is a folder; a zip export needs a file (or name the folder without .zip)`;
  if (kind !== 'zip' && !info.isDirectory()) {
    return `${shown} is a file; ${kind === 'archive' ? 'an archive needs a folder' : 'a folder export needs a folder (or a file name ending in .zip)'}`;
  }
  if (rules.force || kind === 'archive') return null;
  const orForce = (what: string): string => (rules.forceHow ? `, or ${rules.forceHow} to ${what}` : '');
  if (kind === 'zip') {
    const { foreignZipProblem } = await import('../sinks/zip-earlier-run.js');
    const problem = await foreignZipProblem(target);
    return problem ? `${shown} ${problem}, and the export would replace it; name another file${orForce('replace it')}` : null;
  }
  const { foreignNames, foreignNamesProblem } = await import('../sinks/folder.js');
  const names = await foreignNames(target);
  return names.length > 0 ? foreignNamesProblem(shown, names, orForce('write there all the same')) : null;
}
