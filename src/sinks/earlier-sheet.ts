/**
 * Whether a file already at `--out` looks like an earlier sheet download, which a new download may
 * replace: an empty file, a CSV that begins with the UTF-8 byte order mark, or a JSONL file whose
 * first line is a JSON object. Anything else (a hand-made spreadsheet saved under the same name,
 * say) is replaced only with --force, as an export refuses a file named .zip that is not a zip.
 */
import { open } from 'node:fs/promises';
import type { SheetFormat } from './sheet-formats.js';

const HEAD_BYTES = 64 * 1024;

export async function looksLikeSheetDownload(path: string, format: SheetFormat): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(head, 0, HEAD_BYTES, 0);
    if (bytesRead === 0) return true;
    const bytes = head.subarray(0, bytesRead);
    if (format === 'csv') return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
    const end = bytes.indexOf(0x0a);
    // A first line longer than what was read cannot be judged whole: it counts as a record if it opens like one.
    const line = bytes.subarray(0, end === -1 ? bytes.length : end).toString('utf8').trim();
    if (end === -1 && bytesRead === HEAD_BYTES) return line.startsWith('{');
    return isJsonObject(line);
  } finally {
    await handle.close();
  }
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
