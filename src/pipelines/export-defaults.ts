/**
 * The rule that makes a target a zip, apart from the pipeline so that the CLI and `verify` use it
 * without loading the export's stages and HTTP client (the default concurrency is in util/pacing.ts).
 */

/** An export to a path ending in .zip writes a zip; any other path is a folder. */
export const isZipTarget = (out: string): boolean => out.toLowerCase().endsWith('.zip');

/**
 * The zip a link at `out` points to, or `out` itself: a zip is replaced by a rename, which would
 * put a file where the link was and leave the zip it named (on a NAS, say) as it was, with its lock
 * beside the link rather than beside it.
 */
export async function followZipLink(out: string): Promise<string> {
  if (!isZipTarget(out)) return out;
  const [{ lstat, readlink, realpath }, { dirname, resolve }] = await Promise.all([import('node:fs/promises'), import('node:path')]);
  const info = await lstat(out).catch(() => null);
  if (!info?.isSymbolicLink()) return out;
  // A link to a zip not made yet names where the first run is to make it.
  return realpath(out).catch(async () => resolve(dirname(out), await readlink(out)));
}
