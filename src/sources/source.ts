/**
 * Import sources: a folder, a zip, a CSV manifest, or an export made by wds-files (a folder or zip
 * with manifest.jsonl). Each yields its files one at a time, so memory does not grow with the
 * source; a file that cannot be taken (a link, a path escaping the root, a name that is neither
 * UTF-8 nor Shift_JIS, a zip bomb) is yielded as refused with the rule it breaks, and the run goes
 * on.
 */
import type { Readable } from 'node:stream';

/** A file of an import source. */
export interface SourceFile {
  /** Where the file is, for messages and reports: `photos.zip:staff/A0001.jpg`, `/data/x/A0001.jpg`. */
  where: string;
  /** Its path inside the source, `/`-separated, decoded. */
  relPath: string;
  /** The file name as the service should get it (the manifest's original name for exports). */
  fileName: string;
  /** Its size in bytes. */
  size: number;
  /** The member code, when the source says it (CSV, export manifest); else taken from the name. */
  code?: string;
  /** Attachments from an export or a layout path: the sheet the file goes to. */
  sheetId?: number;
  /** Attachments from an export or a layout path: the file part the file goes to. */
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

/** A file of a source that cannot be taken, with the rule it breaks. */
export interface RefusedFile {
  /** Where the file is, for messages and reports. */
  where: string;
  /** Its path inside the source, `/`-separated. */
  relPath: string;
  /** The rule broken, in words a person acts on. */
  reason: string;
  /** The file's name, when the entry is a file whose name could be read (the report's member comes from it). */
  fileName?: string;
  /** The member the source gives the file (a CSV line's code). */
  code?: string;
  /**
   * True when there is no rule broken: the file was listed and then deleted or moved away before
   * it was looked at. An import skips it by name rather than refusing it.
   */
  gone?: boolean;
}

/** What a source yields: a file to import, or one refused with its reason. */
export type SourceEntry =
  | {
      /** A file to import. */
      kind: 'file';
      /** The file. */
      file: SourceFile;
    }
  | {
      /** A file refused, with the rule it breaks. */
      kind: 'refused';
      /** The file, and why it was refused. */
      refused: RefusedFile;
    };

/**
 * What an import takes from a source whose files say what they are (an export's manifest: photos
 * and attachments of any sheet can share one); sources whose files do not say it ignore it.
 */
export interface SourceWant {
  /** Photos or attachments: files of the other kind are passed over, not refused. */
  kind: 'photo' | 'attachment';
  /** Attachments of this sheet only. Default: every sheet. */
  sheetId?: number;
  /** Attachments of this file part (custom field) only. Default: every file part. */
  fieldId?: number;
  /** Told, in words for the run's notes, how many files were passed over and why. */
  note?: (line: string) => void;
}

/** Where an import reads its files: a folder, a zip, a CSV manifest or an export. Open one with {@link openSource}. */
export interface ImportSource {
  /** What the user named. */
  readonly label: string;
  /**
   * The files, one at a time, so memory does not grow with the source; with `want`, only those an
   * export says are of that kind, sheet and file part (it rejects, naming the source, when it holds
   * files but none of them).
   */
  entries(want?: SourceWant): AsyncIterable<SourceEntry>;
  /** Closes the files the source holds open. */
  close(): Promise<void>;
}
