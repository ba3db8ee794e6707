/**
 * The final manifest of a folder: the lines appended during the run, in the order of `sortLines`,
 * a later line of a file over an earlier one. The lines stay as bytes of the file read, and only
 * what the order needs is kept per line, for whole parsed lines made the end of a large run its
 * highest memory. A sink that wrote every line of the file (LineIndex) knows where each is and
 * what orders it, and the lines are not parsed again.
 */
import { open, readFile } from 'node:fs/promises';
import { isSourceLine, type ManifestLine } from './manifest.js';

/** What a line is ordered by, and where its bytes are. */
interface LineOrder {
  photo: boolean;
  sheet: number;
  field: number;
  code: string;
  record: number;
  name: string;
  start: number;
  end: number;
  /** The line, when a LineIndex knew it. */
  line?: ManifestLine;
}

/** What orders `line`, with where its bytes are. */
function orderOf(line: ManifestLine, start: number, end: number): LineOrder {
  const photo = line.kind === 'photo';
  // A photo is one file per member: its key is the code alone (manifestKey).
  return { photo, sheet: line.sheet_id ?? 0, field: line.custom_field_id ?? 0, code: line.code, record: photo ? 0 : line.record_index ?? 0, name: photo ? '' : line.file_name, start, end };
}

/**
 * The lines a sink wrote to its manifest, in order, with where each one's bytes are: at the end
 * of an archive run, parsing its 20,000 lines again cost a tenth of a second. Only lines whose
 * write succeeded are added.
 */
export class LineIndex {
  private entries: LineOrder[] = [];
  /** Bytes of the manifest the lines cover, from its start. */
  bytes = 0;

  /** A line written at the end of the manifest, `length` bytes with its newline. */
  add(line: ManifestLine, length: number): void {
    const entry = orderOf(line, this.bytes, this.bytes + length);
    entry.line = line;
    this.entries.push(entry);
    this.bytes += length;
  }

  /** The manifest's source line, written first, `length` bytes with its newline: not a file's line. */
  skip(length: number): void {
    this.bytes += length;
  }

  /** The lines, if they are the whole of `data` (the manifest as read); null when the file holds more or other bytes. */
  covering(data: Buffer): LineOrder[] | null {
    return this.bytes === data.length ? this.entries : null;
  }
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The order of `sortLines` (photos by code, then attachments by sheet, field, code, record, name). */
const compare = (a: LineOrder, b: LineOrder): number =>
  a.photo !== b.photo ? (a.photo ? -1 : 1)
    : a.sheet - b.sheet || a.field - b.field || byCodeUnits(a.code, b.code) || a.record - b.record || byCodeUnits(a.name, b.name);

/** Lines written at a time. */
const LINES_PER_WRITE = 256;

/**
 * Writes to `to` the lines of `from` (whole lines, each as `formatLine` wrote it) in manifest
 * order, keeping the last line of each file, after `header` (the source line). A missing `from`
 * gives a manifest of the header alone. `onLine` is given each line of `from` as it is read, in
 * the order appended; a source line in `from` is not a file's and is left out.
 */
export async function writeSortedManifest(from: string, to: string, onLine?: (line: ManifestLine) => void, index?: LineIndex, header?: string): Promise<void> {
  let data: Buffer;
  try {
    data = await readFile(from);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    data = Buffer.alloc(0);
  }
  const known = index?.covering(data);
  const lines: LineOrder[] = known ? [...known] : [];
  if (known && onLine) for (const entry of known) onLine(entry.line!);
  let number = 0;
  for (let start = 0; !known && start < data.length; ) {
    const newline = data.indexOf(0x0a, start);
    // Only whole lines are appended; a tail without its newline would be a cut line.
    if (newline < 0) break;
    const end = newline + 1;
    number += 1;
    if (end - start > 1) {
      let line: ManifestLine;
      try {
        line = JSON.parse(data.toString('utf8', start, end)) as ManifestLine;
      } catch (error) {
        // A whole line that does not parse is damage the run cannot mend: say where it is.
        throw new Error(`${from}, line ${number}: not a manifest line (${(error as Error).message})`);
      }
      if (!isSourceLine(line)) {
        onLine?.(line);
        lines.push(orderOf(line, start, end));
      }
    }
    start = end;
  }
  // Equal keys keep the order they were appended in (the sort is stable): the last one wins.
  lines.sort(compare);
  const handle = await open(to, 'w');
  try {
    let part: Buffer[] = header ? [Buffer.from(header)] : [];
    const flush = async (): Promise<void> => {
      const chunk = Buffer.concat(part);
      part = [];
      for (let at = 0; at < chunk.length; ) {
        const { bytesWritten } = await handle.write(chunk, at);
        if (bytesWritten === 0) throw new Error(`only ${at} of ${chunk.length} bytes of the manifest were written`);
        at += bytesWritten;
      }
    };
    for (let i = 0; i < lines.length; i += 1) {
      const line = lines[i]!;
      const next = lines[i + 1];
      if (next && compare(line, next) === 0) continue;
      part.push(data.subarray(line.start, line.end));
      if (part.length >= LINES_PER_WRITE) await flush();
    }
    await flush();
    // On disk before it is renamed over the manifest, so that a power cut leaves one or the other whole.
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a rename in `dir` survive a power cut; a file system that refuses to sync a folder loses nothing by it. */
export async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r').catch(() => null);
  if (!handle) return;
  await handle.sync().catch(() => undefined);
  await handle.close();
}
