/**
 * Where an export writes its files: a folder or a zip, behind one interface (rclone's habit: one
 * interface per role, one conformance test for every implementation).
 */
import { rmdir } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import type { ManifestLine } from './manifest.js';
import type { FileDigest } from '../util/hash-file.js';
import type { StartGate } from '../util/pacing.js';

/** One file being written. The sink stores it, and hashes what it stored. */
export interface EntryWriter {
  /**
   * Appends bytes. Answers nothing when the next bytes may come at once, or a promise to wait for
   * first (backpressure); the bytes are the writer's from then on.
   */
  write(chunk: Buffer): Promise<void> | undefined;
  /** Drops what was written (a download that starts over). */
  restart(): Promise<void>;
  /** The file is complete: put it in place under its path; answers the SHA-256 and size stored. */
  commit(): Promise<FileDigest>;
  /** Drops the file (the download failed). */
  abort(): Promise<void>;
}

export interface ExportSink {
  /** What the sink writes to, as the user named it. */
  readonly target: string;
  /**
   * Manifest lines of an earlier run whose files are still there, by key: a folder's files, checked
   * against their size and sha256; the entries of a zip's `.partial`, checked when `keep` copies
   * them. The map may be on disk (a ManifestIndex: a read a lookup, so that a rerun does not hold
   * a line a file), valid until the sink finishes, pauses or stops.
   */
  intactFromEarlierRun(): Promise<ReadonlyMap<string, ManifestLine>>;
  /**
   * Makes the files of `lines` (of those `intactFromEarlierRun` answered, the ones this run keeps)
   * part of this run's output, and answers the lines it could not: their files are downloaded
   * again. `lines` is gone through once, in order. Stops early when `signal` is aborted, answering
   * the lines not reached.
   */
  keep(lines: Iterable<ManifestLine> | AsyncIterable<ManifestLine>, signal?: AbortSignal): Promise<ManifestLine[]>;
  /** Takes out files of `intactFromEarlierRun` this run does not keep (a folder's; see FolderSink). */
  drop?(lines: ManifestLine[]): Promise<void>;
  /**
   * Gives lines of `intactFromEarlierRun` their new record_index (export-plan.ts, `realign`) in a
   * manifest the sink holds already (a folder's); a zip's lines are those `keep` is given.
   */
  relabel?(changed: { before: ManifestLine; after: ManifestLine }[]): Promise<void>;
  /** A writer for the file at `path` inside the export, put in place by its `commit`; `expectedSize` (as listed) lets a zip plan its memory. */
  open(path: string, expectedSize?: number): Promise<EntryWriter>;
  /** Records a committed file in the manifest. */
  record(line: ManifestLine): Promise<void>;
  /**
   * Writes the final manifest and completes the output. `onLine` is given each line of the final
   * manifest (one a file), in its order.
   */
  finish(onLine?: (line: ManifestLine) => void): Promise<void>;
  /**
   * A run stopped by a signal: writes the manifest of the files present and leaves the output for
   * the next run to continue (a folder as it is, a zip as a complete `.partial`). `onLine` as for
   * `finish`.
   */
  pause(onLine?: (line: ManifestLine) => void): Promise<void>;
  /** Stops after a fatal error, leaving no temporary files. */
  abort(): Promise<void>;
  /**
   * Stops a run whose lock another run took over: closes what it has open and removes nothing,
   * since the temporary files and the target are that run's now.
   */
  letGo(): Promise<void>;
  /** When given, holds new downloads back while the sink cannot keep up with more (see ZipSink). */
  readonly starts?: StartGate;
}

/** Types already compressed are stored in a zip; text formats are deflated (DESIGN.md section 4). */
const DEFLATE = new Set(['txt', 'csv', 'xml', 'htm', 'html', 'rtf', 'doc', 'xls', 'ppt', 'xdw', 'msg', 'tif', 'tiff', 'jsonl', 'json', 'bmp', 'svg']);

export function shouldDeflate(path: string): boolean {
  const dot = path.lastIndexOf('.');
  return dot > path.lastIndexOf('/') && DEFLATE.has(path.slice(dot + 1).toLowerCase());
}

/**
 * Removes `dir`, then its parents up to `first`, while they are empty: the folders a sink made
 * for a run that failed before anything was written (`first` is what `mkdir(..., { recursive:
 * true })` answered for `dir`: the first folder it made, or undefined when `dir` was there
 * already). A folder with anything in it stays, and so do its parents; nothing outside `first`
 * is touched.
 */
export async function removeEmptyDirs(dir: string, first: string | undefined): Promise<void> {
  if (first === undefined) return;
  const stop = resolve(first);
  const start = resolve(dir);
  const inside = relative(stop, start);
  if (inside.startsWith('..') || isAbsolute(inside)) return;
  for (let current = start; ; current = dirname(current)) {
    try {
      await rmdir(current);
    } catch {
      return;
    }
    if (current === stop) return;
  }
}
