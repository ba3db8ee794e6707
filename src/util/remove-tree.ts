/**
 * Removes a folder and everything in it in memory that does not grow with what it holds.
 * `fs.promises.rm(recursive)` opens every entry of a folder at once: a snapshot folder of 100,000
 * files took 689 MiB that way. `rm -rf` (a child, where there is one) walks it in C; elsewhere, or
 * when it fails, the folder is walked here one entry at a time, whose errors say what stood in the way.
 */
import { spawn } from 'node:child_process';
import { lstat, opendir, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** Removes `path` (a file or a folder, with everything in it); a missing one is no error. */
export async function removeTree(path: string): Promise<void> {
  if (process.platform !== 'win32' && (await rmRf(path))) return;
  await walkRemove(path);
}

/** `rm -rf -- path`: whether it ran and removed it. */
function rmRf(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('rm', ['-rf', '--', path], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('close', (code) => resolve(code === 0));
  });
}

const gone = (error: unknown): boolean => (error as NodeJS.ErrnoException).code === 'ENOENT';

async function walkRemove(path: string): Promise<void> {
  let isFolder: boolean;
  try {
    isFolder = (await lstat(path)).isDirectory();
  } catch (error) {
    if (gone(error)) return;
    throw error;
  }
  if (!isFolder) {
    await unlink(path).catch((error: unknown) => {
      if (!gone(error)) throw error;
    });
    return;
  }
  // Entries removed while the folder is read may make the reading skip others: it is read again
  // until it is empty.
  for (let pass = 0; ; pass += 1) {
    const dir = await opendir(path, { bufferSize: 64 });
    let seen = 0;
    for await (const entry of dir) {
      seen += 1;
      await walkRemove(join(path, entry.name));
    }
    try {
      await rmdir(path);
      return;
    } catch (error) {
      if (gone(error)) return;
      if ((error as NodeJS.ErrnoException).code !== 'ENOTEMPTY' || seen === 0 || pass > 10) throw error;
    }
  }
}
