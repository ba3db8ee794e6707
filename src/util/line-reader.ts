/**
 * Whole lines of a file, read a block at a time: a manifest of 200,000 lines is read in the memory
 * of one block and its lines, not as one buffer or string of the whole file.
 */
import { open, type FileHandle } from 'node:fs/promises';

/** Bytes read at a time, unless told otherwise. */
const BLOCK = 1 << 20;

export interface ReadLine {
  /** The line's bytes with its newline (a view of the block: copy it to keep it past the next read). */
  bytes: Buffer;
  /** Its number in the file, from 1. */
  number: number;
  /** Where it starts in the file. */
  offset: number;
}

/**
 * The whole lines of the file at `path`, each ending in a newline; a tail without its newline (a
 * line cut by a stop, in a file appended to) is left out unless `tail` is set (a finished file,
 * whose last line may lack one). A missing file has no lines when `missingIsEmpty` is set.
 * `blockBytes` is read at a time (a megabyte by default): smaller for many files read at once.
 */
export async function* readLines(path: string, options: { missingIsEmpty?: boolean; tail?: boolean; blockBytes?: number } = {}): AsyncGenerator<ReadLine> {
  const blockBytes = options.blockBytes ?? BLOCK;
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if (options.missingIsEmpty && (error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    let rest = Buffer.alloc(0);
    let offset = 0;
    let number = 0;
    for (;;) {
      const block = Buffer.allocUnsafe(blockBytes);
      const { bytesRead } = await handle.read(block, 0, blockBytes, null);
      if (bytesRead === 0) {
        if (options.tail && rest.length > 0) yield { bytes: rest, number: number + 1, offset };
        return;
      }
      const data = rest.length > 0 ? Buffer.concat([rest, block.subarray(0, bytesRead)]) : block.subarray(0, bytesRead);
      let start = 0;
      for (let newline = data.indexOf(0x0a); newline >= 0; newline = data.indexOf(0x0a, start)) {
        number += 1;
        yield { bytes: data.subarray(start, newline + 1), number, offset };
        offset += newline + 1 - start;
        start = newline + 1;
      }
      rest = Buffer.from(data.subarray(start));
    }
  } finally {
    await handle.close();
  }
}
