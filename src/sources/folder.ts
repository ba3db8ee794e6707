/**
 * A folder as an import source (DESIGN.md section 5): every file under it, at any depth, in a
 * stable order (names sorted by code unit in each folder, folders walked as they come), read only
 * when asked. Links are refused and never followed, neither when walking nor when opening (a link
 * put in place after the walk fails to open); dotfiles, `__MACOSX/`, `Thumbs.db`, the export's
 * `manifest.jsonl` and `.wds-tmp/` are skipped.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { ImportSource, SourceEntry, SourceFile } from './source.js';
import { GONE_REASON, errorAbout, isSkippedPath, isSkippedSegment, readLimited } from './file-rules.js';

export const LINK_REFUSED = 'is a link; links are not followed';

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Largest read of a file at a time. */
const READ_BYTES = 1 << 20;

/**
 * Opens a regular file without following a link in its last segment (O_NOFOLLOW where the OS has
 * it). With `size` (what a walk saw), reads are that size and a byte (16 KB at least), not READ_BYTES: a stream's
 * every read takes a buffer of its full size, and 40,000 reads of small files took 40 GB from the
 * allocator, a third of an import's time in garbage collection.
 */
export async function openNoFollow(path: string, where: string, size?: number): Promise<Readable> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new Error(`${where}: ${LINK_REFUSED}`);
    throw errorAbout(where, error);
  }
  return handle.createReadStream({ highWaterMark: size === undefined ? READ_BYTES : Math.min(READ_BYTES, Math.max(size + 1, 16 * 1024)) });
}

/** Reads a file on disk as a SourceFile does: no link followed, at most `maxBytes`. */
export function readDiskFile(path: string, size: number, maxBytes: number, into?: Buffer): Promise<Buffer> {
  return readLimited(path, size, maxBytes, () => openNoFollow(path, path, size), into);
}

/** A file on disk as a SourceFile; `size` is what the walk saw, and reading checks it again. */
export function diskFile(path: string, fields: Omit<SourceFile, 'where' | 'read' | 'open'>): SourceFile {
  return new DiskFile(path, fields);
}

/** Its methods on the prototype, not closures per file: a CSV may name a million files. */
class DiskFile implements SourceFile {
  readonly where: string;
  readonly diskPath: string;
  readonly relPath: string;
  readonly fileName: string;
  readonly size: number;
  readonly code?: string;
  readonly sheetId?: number;
  readonly fieldId?: number;
  readonly recordIndex?: number;

  constructor(path: string, fields: Omit<SourceFile, 'where' | 'read' | 'open'>) {
    this.where = path;
    this.diskPath = path;
    this.relPath = fields.relPath;
    this.fileName = fields.fileName;
    this.size = fields.size;
    if (fields.code !== undefined) this.code = fields.code;
    if (fields.sheetId !== undefined) this.sheetId = fields.sheetId;
    if (fields.fieldId !== undefined) this.fieldId = fields.fieldId;
    if (fields.recordIndex !== undefined) this.recordIndex = fields.recordIndex;
  }

  open(): Promise<Readable> {
    return openNoFollow(this.diskPath, this.where, this.size);
  }

  read(maxBytes: number, into?: Buffer): Promise<Buffer> {
    return readDiskFile(this.diskPath, this.size, maxBytes, into);
  }
}

export class FolderSource implements ImportSource {
  constructor(
    /** The folder as the user named it. */
    readonly label: string,
  ) {}

  async *entries(): AsyncGenerator<SourceEntry> {
    yield* this.walk('');
  }

  /** One folder: its names sorted, files yielded, sub-folders walked in place. */
  private async *walk(relDir: string): AsyncGenerator<SourceEntry> {
    const dir = join(this.label, relDir);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      // The root unreadable is fatal; a sub-folder unreadable is one refusal, and the walk goes on.
      if (relDir === '') throw errorAbout(this.label, error);
      yield { kind: 'refused', refused: { where: dir, relPath: relDir, reason: `the folder cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})` } };
      return;
    }
    for (const name of names.sort(byCodeUnit)) {
      if (isSkippedSegment(name)) continue;
      const relPath = relDir ? `${relDir}/${name}` : name;
      if (isSkippedPath(relPath)) continue;
      const path = join(this.label, relPath);
      const shown = relPath.normalize('NFC');
      let info;
      try {
        info = await lstat(path);
      } catch (error) {
        // Removed after the folder was listed: nothing to import, but the user is told which file.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          yield { kind: 'refused', refused: { where: path, relPath: shown, reason: GONE_REASON, gone: true, fileName: name.normalize('NFC') } };
          continue;
        }
        yield { kind: 'refused', refused: { where: path, relPath: shown, reason: `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`, fileName: name.normalize('NFC') } };
        continue;
      }
      if (info.isSymbolicLink()) {
        yield { kind: 'refused', refused: { where: path, relPath: shown, reason: LINK_REFUSED, fileName: name.normalize('NFC') } };
      } else if (info.isDirectory()) {
        yield* this.walk(relPath);
      } else if (!info.isFile()) {
        yield { kind: 'refused', refused: { where: path, relPath: shown, reason: 'is not a regular file (a pipe, socket or device)', fileName: name.normalize('NFC') } };
      } else {
        // macOS stores names decomposed (NFD); the service and the reports get them composed.
        yield { kind: 'file', file: diskFile(path, { relPath: shown, fileName: name.normalize('NFC'), size: info.size }) };
      }
    }
  }

  async close(): Promise<void> {}
}
