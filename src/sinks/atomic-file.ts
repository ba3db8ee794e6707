/**
 * A file replaced whole or not at all: the text goes to `<file>.partial` in the same folder (so the
 * rename stays on one file system), is flushed to disk, and is then renamed over the target. A
 * failure or a stop removes the partial file, and whatever was at the target before is left as it
 * was. The caller holds the target's lock, so no other run writes the same partial name.
 */
import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

export const partialFileOf = (target: string): string => `${target}.partial`;

export interface AtomicWriteOptions {
  /** Checked between pieces: once aborted, nothing more is written and the target is left untouched. */
  signal?: AbortSignal;
  /**
   * Called once the text is on disk, before the rename: a rejection (the target's lock taken over
   * by another run) leaves the target and the partial file as they are, since both may be that
   * run's now, and is what the write rejects with.
   */
  beforeRename?: () => Promise<void>;
}

/** Writes `pieces` to `target` atomically; returns the bytes written. */
export async function writeFileAtomically(target: string, pieces: Iterable<string>, options: AtomicWriteOptions = {}): Promise<number> {
  const partial = partialFileOf(target);
  let bytes = 0;
  const handle = await open(partial, 'w');
  try {
    for (const piece of pieces) {
      options.signal?.throwIfAborted();
      const buffer = Buffer.from(piece, 'utf8');
      await handle.write(buffer);
      bytes += buffer.length;
    }
    options.signal?.throwIfAborted();
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(partial).catch(() => undefined);
    throw error;
  }
  await handle.close();
  await options.beforeRename?.();
  try {
    await rename(partial, target);
  } catch (error) {
    await unlink(partial).catch(() => undefined);
    throw error;
  }
  await syncFolder(dirname(target));
  return bytes;
}

/** Makes the rename itself survive a power cut; some file systems refuse to sync a folder, which loses nothing here. */
async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r').catch(() => null);
  if (!handle) return;
  await handle.sync().catch(() => undefined);
  await handle.close();
}
