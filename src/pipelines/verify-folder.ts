/**
 * `verify` of an export folder, or of a snapshot (an export folder with its `snapshot.json`): each
 * manifest line's file present as a regular file inside the folder, with its size and sha256, and
 * every other file named.
 */
import { lstat, opendir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LinkCheck, MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { openManifestInOrder } from '../sinks/manifest-order.js';
import { SortedSpill } from '../util/sorted-spill.js';
import { hashFile } from '../util/hash-file.js';
import { isLockFileName } from '../util/target-lock.js';
import { SNAPSHOT_FILE } from '../archive/store.js';
import type { VerifyTally } from './verify-result.js';

/** Checks a snapshot of an archive, whose own description is no export file; false when `target` is no snapshot. */
export async function verifySnapshot(target: string, tally: VerifyTally): Promise<boolean> {
  if (!(await stat(join(target, SNAPSHOT_FILE)).catch(() => null))) return false;
  await verifyFolder(target, tally, [SNAPSHOT_FILE]);
  return true;
}

/**
 * Checks every file of the export folder `target` against its manifest; `own` names files of the
 * target that are no export file. The manifest is read in order a part at a time, and the paths
 * it names and the files found are sorted through temporary files and merged (issue 46).
 */
export async function verifyFolder(target: string, tally: VerifyTally, own: string[] = []): Promise<void> {
  const manifest = await openManifestInOrder(target).catch(async (error: unknown) => {
    throw await manifestError(target, error);
  });
  const named = new SortedSpill<null>();
  const found = new SortedSpill<null>();
  try {
    for (const p of manifest.problems) tally.fail(MANIFEST_NAME, p);
    const links = new LinkCheck(target);
    for await (const { line, number } of manifest.lines()) {
      tally.result.files += 1;
      await named.add(line.path, null);
      // A path through a link may end outside the export: it is reported, and not read.
      const link = await links.linkIn(line.path);
      if (link) tally.fail(line.path, `${MANIFEST_NAME} line ${number}: ${LinkCheck.reason(link)}`);
      else await checkFile(target, line, tally);
    }
    // As in a zip, a file the manifest does not name is reported (a leftover, or something added).
    for await (const path of filesUnder(target)) await found.add(path, null);
    const names = named.sorted();
    let name = (await names.next()).value?.[0];
    for await (const [path] of found.sorted()) {
      while (name !== undefined && name < path) name = (await names.next()).value?.[0];
      // The lock of a run writing the folder (or one a killed run left) is not an export file.
      if (name !== path && path !== MANIFEST_NAME && !own.includes(path) && !isLockFileName(path)) tally.fail(path, 'not in the manifest');
    }
  } finally {
    named.close();
    found.close();
    await manifest.close();
  }
}

/** Why the manifest of `target` cannot be read: which of the target and its manifest is missing, or unreadable, says what to mend. */
async function manifestError(target: string, error: unknown): Promise<Error> {
  const code = (error as NodeJS.ErrnoException).code;
  const info = await stat(target).catch(() => null);
  if (!info) return new Error(`${target}: no such folder or zip`);
  if (!info.isDirectory()) return new Error(`${target}: neither a folder nor a .zip file; verify checks an export folder, a snapshot or an export zip`);
  if (code === 'ENOENT') return new Error(`${target}: no ${MANIFEST_NAME}; it is not an export folder`);
  return new Error(`${join(target, MANIFEST_NAME)} cannot be read (${code ?? (error as Error).message})`);
}

/** One manifest line's file: a regular file, not a link or a folder, with the line's size and sha256. */
async function checkFile(target: string, line: ManifestLine, tally: VerifyTally): Promise<void> {
  const path = join(target, line.path);
  let size: number;
  try {
    const info = await lstat(path);
    if (!info.isFile()) {
      tally.fail(line.path, info.isSymbolicLink() ? 'is a link, not the file the manifest lists' : 'is not a regular file (a folder?), the manifest lists a file');
      return;
    }
    size = info.size;
  } catch {
    tally.fail(line.path, 'missing');
    return;
  }
  tally.compare(line, size, size === line.size ? (await hashFile(path)).sha256 : '');
}

/** Every file under `dir`, as a path inside the export (`/` separated), a folder read at a time. */
async function* filesUnder(dir: string, inside = ''): AsyncGenerator<string> {
  for await (const entry of await opendir(inside ? join(dir, inside) : dir)) {
    const path = inside ? `${inside}/${entry.name}` : entry.name;
    if (entry.isDirectory()) yield* filesUnder(dir, path);
    else if (entry.isFile()) yield path;
  }
}
