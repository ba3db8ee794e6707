/**
 * What every import source shares: which names are not files of the user (DESIGN.md section 5
 * skips them silently), and reading a file whole under a byte limit.
 */
import type { Readable } from 'node:stream';

/** The export's manifest and temporary folder (DESIGN.md section 4): ours, never the user's files. */
export const MANIFEST_FILE = 'manifest.jsonl';
export const EXPORT_TMP_DIR = '.wds-tmp';

/** Files that operating systems leave behind: Windows thumbnails and folder settings. */
const OS_FILES = new Set(['thumbs.db', 'ehthumbs.db', 'desktop.ini']);

/**
 * Whether one segment of a path is skipped: dotfiles and dot folders (`.DS_Store`, `._A0001.jpg`,
 * `.wds-tmp`), macOS's `__MACOSX/` resource forks, and Windows' `Thumbs.db` and `desktop.ini`.
 */
export function isSkippedSegment(segment: string): boolean {
  return segment.startsWith('.') || segment === '__MACOSX' || OS_FILES.has(segment.toLowerCase());
}

/** Whether a `/`-separated path inside a source is skipped (any segment, or the manifest at the root). */
export function isSkippedPath(relPath: string): boolean {
  return relPath === MANIFEST_FILE || relPath.split('/').some(isSkippedSegment);
}

/**
 * Why a file listed by its source is skipped when it is no longer there to read: deleted or
 * moved away (a drop folder's user, or another program) between the listing and the read.
 */
export const GONE_REASON = 'gone before it was read (deleted or moved away after it was listed); nothing was sent';

/** Whether a read failed because the file (or its folder) is no longer there, as the error or its cause says. */
export function isGone(error: unknown): boolean {
  let e = error as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth += 1, e = e.cause as typeof e) {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return true;
  }
  return false;
}

export function tooLargeMessage(where: string, size: number | string, maxBytes: number): string {
  return `${where}: ${size} bytes, over the limit of ${maxBytes} bytes`;
}

/** Prefixes an error's message with the file it happened to, once. */
export function errorAbout(where: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new Error(message.startsWith(`${where}:`) ? message : `${where}: ${message}`, { cause: error });
}

/**
 * Reads a whole file of `size` bytes, refusing before reading when it is larger than `maxBytes`,
 * and stopping as soon as more than `maxBytes` arrive (a file that grew, a zip entry that lies).
 * With `into`, a file that fits is read into it and the result is a view of it (a caller checking
 * many files reuses one buffer rather than leaving one per file to the garbage collector).
 */
export async function readLimited(where: string, size: number, maxBytes: number, open: () => Promise<Readable>, into?: Buffer): Promise<Buffer> {
  if (size > maxBytes) throw new Error(tooLargeMessage(where, size, maxBytes));
  const stream = await open();
  const chunks: Buffer[] = [];
  let total = 0;
  let inPlace = into !== undefined && size <= into.length;
  try {
    for await (const chunk of stream) {
      const data = chunk as Buffer;
      if (total + data.length > maxBytes) throw new Error(tooLargeMessage(where, `more than ${maxBytes}`, maxBytes));
      if (inPlace && total + data.length <= into!.length) {
        data.copy(into!, total);
      } else {
        // Grown past `into` since it was listed: the rest is read as without it.
        if (inPlace) chunks.push(Buffer.from(into!.subarray(0, total)));
        inPlace = false;
        chunks.push(data);
      }
      total += data.length;
    }
  } catch (error) {
    stream.destroy();
    throw errorAbout(where, error);
  }
  return inPlace ? into!.subarray(0, total) : Buffer.concat(chunks, total);
}
