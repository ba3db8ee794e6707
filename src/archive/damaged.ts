/**
 * Files `archive check --read-data` found damaged (their bytes' sha256 not the manifest's), in
 * `<archive>/damaged.jsonl`: the next run reads it and downloads those files instead of linking
 * them forward, plain `check` names them again without reading them, and `archive repair` replaces
 * them and takes them out. A line names a file by its snapshot, its path and its inode: once the
 * path holds another inode (repaired, or replaced by a later run) the line says nothing more.
 */
import { appendFile, lstat, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const DAMAGED_FILE = 'damaged.jsonl';

export interface DamagedFile {
  snapshot: string;
  path: string;
  /** The file's inode (`dev:ino`) when it was found damaged. */
  inode: string;
  /** What was found, and when. */
  problem: string;
  found_at: string;
}

export async function readDamaged(archive: string): Promise<DamagedFile[]> {
  const text = await readFile(join(archive, DAMAGED_FILE), 'utf8').catch(() => '');
  const found: DamagedFile[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      const value = JSON.parse(line) as Partial<DamagedFile>;
      if (typeof value.snapshot === 'string' && typeof value.path === 'string' && typeof value.inode === 'string') {
        found.push({ snapshot: value.snapshot, path: value.path, inode: value.inode, problem: String(value.problem ?? ''), found_at: String(value.found_at ?? '') });
      }
    } catch {
      // A line cut short (a check killed while appending): the next check finds the file again.
    }
  }
  return found;
}

/**
 * The damaged files still there as they were found, by `<snapshot dir>/<path>`: the same inode
 * at that path.
 */
export async function damagedStill(archive: string, dirOf: (snapshot: string) => string): Promise<Map<string, DamagedFile>> {
  const still = new Map<string, DamagedFile>();
  for (const file of await readDamaged(archive)) {
    const path = join(dirOf(file.snapshot), file.path);
    const info = await lstat(path).catch(() => null);
    if (info && `${info.dev}:${info.ino}` === file.inode) still.set(path, file);
  }
  return still;
}

/**
 * Adds what a check found. Appended, without the archive's lock (a check only reads otherwise):
 * a line is written whole by one append, and a run reading the file meanwhile reads it or not.
 */
export async function noteDamaged(archive: string, files: DamagedFile[]): Promise<void> {
  if (files.length === 0) return;
  const known = new Set((await readDamaged(archive)).map((f) => `${f.snapshot}/${f.path}/${f.inode}`));
  const fresh = files.filter((f) => !known.has(`${f.snapshot}/${f.path}/${f.inode}`));
  if (fresh.length) await appendFile(join(archive, DAMAGED_FILE), fresh.map((f) => `${JSON.stringify(f)}\n`).join(''));
}

/** Keeps only `left` (a command holding the archive's lock: `repair`); no file when none is left. */
export async function rewriteDamaged(archive: string, left: DamagedFile[]): Promise<void> {
  const file = join(archive, DAMAGED_FILE);
  if (left.length === 0) {
    await rm(file, { force: true });
    return;
  }
  const temp = `${file}.${process.pid}`;
  await writeFile(temp, left.map((f) => `${JSON.stringify(f)}\n`).join(''));
  await rename(temp, file);
}
