/** A file's first line, read without the rest: a manifest's source line leads it. */
import { open } from 'node:fs/promises';

/** The first line of a file, at most `limit` bytes of it ('' when it cannot be read). */
export async function firstLine(path: string, limit = 64 * 1024): Promise<string> {
  const handle = await open(path, 'r').catch(() => null);
  if (!handle) return '';
  try {
    const buffer = Buffer.alloc(limit);
    const { bytesRead } = await handle.read(buffer, 0, limit, 0);
    const text = buffer.toString('utf8', 0, bytesRead);
    const end = text.indexOf('\n');
    return end < 0 ? '' : text.slice(0, end + 1);
  } finally {
    await handle.close();
  }
}
