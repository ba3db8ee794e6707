/**
 * The final manifest of a folder: the lines appended during the run, in the order of `sortLines`,
 * a later line of a file over an earlier one. The lines stay as bytes of the file read, and only
 * what the order needs is parsed from them. A manifest of more lines than one run holds is sorted
 * as rclone and sort(1) sort what does not fit: runs of lines sorted in memory and written next to
 * the manifest, then merged, so that its memory does not grow with the number of files.
 */
import { randomBytes } from 'node:crypto';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isSourceLine, type ManifestLine } from './manifest.js';
import { readLines } from '../util/line-reader.js';

/** What a line is ordered by, with its bytes. */
interface Entry {
  photo: boolean;
  sheet: number;
  field: number;
  code: string;
  record: number;
  name: string;
  line: ManifestLine;
  bytes: Buffer;
}

/** What orders `line`, with its bytes. */
function entryOf(line: ManifestLine, bytes: Buffer): Entry {
  const photo = line.kind === 'photo';
  // A photo is one file per member: its key is the code alone (manifestKey).
  return { photo, sheet: line.sheet_id ?? 0, field: line.custom_field_id ?? 0, code: line.code, record: photo ? 0 : line.record_index ?? 0, name: photo ? '' : line.file_name, line, bytes };
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The order of `sortLines` (photos by code, then attachments by sheet, field, code, record, name). */
const compare = (a: Entry, b: Entry): number =>
  a.photo !== b.photo ? (a.photo ? -1 : 1)
    : a.sheet - b.sheet || a.field - b.field || byCodeUnits(a.code, b.code) || a.record - b.record || byCodeUnits(a.name, b.name);

/** Lines sorted in memory at a time: a run of them is about 7 MB of objects and bytes. */
export const LINES_PER_RUN = 8192;

/** Bytes read at a time from each run as they are merged: 25 runs for 200,000 lines. */
const RUN_READ_BYTES = 64 * 1024;

/** Bytes written at a time. */
const WRITE_BYTES = 256 * 1024;

/** Writes buffers to a file in blocks, checking that each write took all its bytes. */
class BlockWriter {
  private part: Buffer[] = [];
  private size = 0;

  constructor(private readonly handle: FileHandle, header?: string) {
    if (header) this.push(Buffer.from(header));
  }

  async add(bytes: Buffer): Promise<void> {
    this.push(bytes);
    if (this.size >= WRITE_BYTES) await this.flush();
  }

  private push(bytes: Buffer): void {
    this.part.push(bytes);
    this.size += bytes.length;
  }

  async flush(): Promise<void> {
    const chunk = Buffer.concat(this.part);
    this.part = [];
    this.size = 0;
    for (let at = 0; at < chunk.length; ) {
      const { bytesWritten } = await this.handle.write(chunk, at);
      if (bytesWritten === 0) throw new Error(`only ${at} of ${chunk.length} bytes of the manifest were written`);
      at += bytesWritten;
    }
  }
}

/** The lines of `entries` sorted, the last of each file's: equal keys keep the order they were appended in (the sort is stable). */
function sortRun(entries: Entry[]): Entry[] {
  entries.sort(compare);
  return entries.filter((entry, i) => i + 1 === entries.length || compare(entry, entries[i + 1]!) !== 0);
}

/** A run's lines in order, one at a time: from memory, or from the run's file. */
type RunSource = AsyncIterator<Entry>;

async function* fromMemory(entries: Entry[]): AsyncGenerator<Entry> {
  yield* entries;
}

async function* fromFile(path: string): AsyncGenerator<Entry> {
  for await (const { bytes } of readLines(path, { blockBytes: RUN_READ_BYTES })) {
    // A run was written from lines parsed already.
    const copy = Buffer.from(bytes);
    yield entryOf(JSON.parse(copy.toString('utf8')) as ManifestLine, copy);
  }
}

/**
 * Writes to `to` the lines of `from` (whole lines, each as `formatLine` wrote it) in manifest
 * order, keeping the last line of each file, after `header` (the source line). A missing `from`
 * gives a manifest of the header alone. `onLine` is given each line of the final manifest, in its
 * order; a source line in `from` is not a file's and is left out. Runs of `linesPerRun` lines are
 * sorted in memory; more lines than that are sorted through files next to `to`, removed after.
 */
export async function writeSortedManifest(from: string, to: string, onLine?: (line: ManifestLine) => void, header?: string, linesPerRun = LINES_PER_RUN): Promise<void> {
  const runs: string[] = [];
  const stem = join(dirname(to), `.sort-${randomBytes(4).toString('hex')}`);
  try {
    let entries: Entry[] = [];
    for await (const { bytes, number } of readLines(from, { missingIsEmpty: true })) {
      if (bytes.length <= 1) continue;
      let line: ManifestLine;
      try {
        line = JSON.parse(bytes.toString('utf8')) as ManifestLine;
      } catch (error) {
        // A whole line that does not parse is damage the run cannot mend: say where it is.
        throw new Error(`${from}, line ${number}: not a manifest line (${(error as Error).message})`);
      }
      if (isSourceLine(line)) continue;
      entries.push(entryOf(line, Buffer.from(bytes)));
      if (entries.length >= linesPerRun) {
        runs.push(await writeRun(`${stem}-${runs.length}`, sortRun(entries)));
        entries = [];
      }
    }
    const sources: RunSource[] = [...runs.map((path) => fromFile(path)), fromMemory(sortRun(entries))];
    entries = [];
    await writeMerged(sources, to, onLine, header);
  } finally {
    await Promise.all(runs.map((path) => rm(path, { force: true })));
  }
}

/** Writes a sorted run to `path` and answers the path. */
async function writeRun(path: string, entries: Entry[]): Promise<string> {
  const handle = await open(path, 'w');
  try {
    const writer = new BlockWriter(handle);
    for (const entry of entries) await writer.add(entry.bytes);
    await writer.flush();
  } finally {
    await handle.close();
  }
  return path;
}

/**
 * Merges the sorted runs (oldest first) into `to`: of lines with one key, the one from the latest
 * run wins, as the last appended does within a run.
 */
async function writeMerged(sources: RunSource[], to: string, onLine: ((line: ManifestLine) => void) | undefined, header: string | undefined): Promise<void> {
  const heads: (Entry | undefined)[] = await Promise.all(sources.map(async (source) => (await source.next()).value as Entry | undefined));
  const handle = await open(to, 'w');
  try {
    const writer = new BlockWriter(handle, header);
    for (;;) {
      // The first line in order, of the latest run among equals; equal lines of earlier runs are passed over.
      let at = -1;
      for (let i = 0; i < heads.length; i += 1) {
        const head = heads[i];
        if (head && (at < 0 || compare(head, heads[at]!) <= 0)) at = i;
      }
      if (at < 0) break;
      const chosen = heads[at]!;
      for (let i = 0; i < heads.length; i += 1) {
        while (heads[i] && compare(heads[i]!, chosen) === 0) heads[i] = (await sources[i]!.next()).value as Entry | undefined;
      }
      onLine?.(chosen.line);
      await writer.add(chosen.bytes);
    }
    await writer.flush();
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
