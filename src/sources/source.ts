/**
 * Import sources: a folder, a zip, a CSV manifest, or an export made by wds-files (a folder or zip
 * with manifest.jsonl). Each yields its files one at a time, so memory does not grow with the
 * source; a file that cannot be taken (a link, a path escaping the root, a name that is neither
 * UTF-8 nor Shift_JIS, a zip bomb) is yielded as refused with the rule it breaks, and the run goes
 * on.
 */
import type { Readable } from 'node:stream';

export interface SourceFile {
  /** Where the file is, for messages and reports: `photos.zip:staff/A0001.jpg`, `/data/x/A0001.jpg`. */
  where: string;
  /** Its path inside the source, `/`-separated, decoded. */
  relPath: string;
  /** The file name as the service should get it (the manifest's original name for exports). */
  fileName: string;
  size: number;
  /** The member code, when the source says it (CSV, export manifest); else taken from the name. */
  code?: string;
  /** Attachments from an export or a layout path: where the file goes. */
  sheetId?: number;
  fieldId?: number;
  /** Attachments from an export: the record it came from (keeps records in source order). */
  recordIndex?: number;
  /**
   * Reads the whole file (at most `maxBytes`, else rejects naming the file and the limit); into
   * `into` when it fits there, the result then being a view of it.
   */
  read(maxBytes: number, into?: Buffer): Promise<Buffer>;
  /**
   * A file on disk: its path, for another process to read with the same rules (photo-checker.ts
   * reads photos in the checker's process, not through this one's memory).
   */
  diskPath?: string;
  /** Streams the file. */
  open(): Promise<Readable>;
}

export interface RefusedFile {
  where: string;
  relPath: string;
  /** The rule broken, in words a person acts on. */
  reason: string;
}

export type SourceEntry = { kind: 'file'; file: SourceFile } | { kind: 'refused'; refused: RefusedFile };

export interface ImportSource {
  /** What the user named. */
  readonly label: string;
  entries(): AsyncIterable<SourceEntry>;
  close(): Promise<void>;
}
