/**
 * Reading zips with yauzl (DESIGN.md section 7): lazy entries, so memory does not grow with the
 * archive; raw name bytes kept (Shift_JIS names are decoded by the import sources). With
 * `decodeStrings: true` yauzl stops the whole archive at the first name that escapes the root; the
 * import sources open with `decodeStrings: false` and judge each name themselves (zip.ts), so one
 * bad entry is refused and the others are still read.
 */
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import type { Readable } from 'node:stream';

export interface ZipEntry {
  name: string;
  /** The name's bytes as stored (for Shift_JIS decoding). */
  rawName: Buffer;
  size: number;
  compressedSize: number;
  isDirectory: boolean;
  /** Whether the name was flagged UTF-8 (general purpose bit 11). */
  utf8: boolean;
  /** Unix mode bits when the zip was made on Unix (links have S_IFLNK). */
  mode: number;
  /** 0 stored, 8 deflated; yauzl reads no other method. */
  compressionMethod: number;
  /** General purpose bit 0: yauzl cannot read encrypted entries. */
  encrypted: boolean;
  /** The central directory's extra fields (the Info-ZIP Unicode Path field is 0x7075). */
  extraFields: { id: number; data: Buffer }[];
  entry: Entry;
}

export class ZipReader {
  private constructor(private readonly zip: ZipFile, readonly path: string) {}

  static open(path: string, options: { decodeStrings?: boolean; validateEntrySizes?: boolean } = {}): Promise<ZipReader> {
    return new Promise((resolve, reject) => {
      yauzl.open(path, { lazyEntries: true, autoClose: false, decodeStrings: options.decodeStrings ?? true, validateEntrySizes: options.validateEntrySizes ?? true }, (error, zip) => {
        if (error || !zip) reject(new Error(`${path}: not a readable zip (${error?.message ?? 'unknown error'})`));
        else resolve(new ZipReader(zip, path));
      });
    });
  }

  get entryCount(): number {
    return this.zip.entryCount;
  }

  /** Every entry, one at a time. */
  async *entries(): AsyncGenerator<ZipEntry> {
    const zip = this.zip;
    for (;;) {
      const entry = await new Promise<Entry | null>((resolve, reject) => {
        const onEntry = (e: Entry): void => {
          cleanup();
          resolve(e);
        };
        const onEnd = (): void => {
          cleanup();
          resolve(null);
        };
        const onError = (err: Error): void => {
          cleanup();
          reject(new Error(`${this.path}: ${err.message}`));
        };
        const cleanup = (): void => {
          zip.off('entry', onEntry);
          zip.off('end', onEnd);
          zip.off('error', onError);
        };
        zip.on('entry', onEntry);
        zip.on('end', onEnd);
        zip.on('error', onError);
        zip.readEntry();
      });
      if (!entry) return;
      const name = typeof entry.fileName === 'string' ? entry.fileName : Buffer.from(entry.fileName as unknown as Buffer).toString('latin1');
      const rawName = Buffer.isBuffer(entry.fileName) ? (entry.fileName as unknown as Buffer) : Buffer.from(name, 'utf8');
      yield {
        name,
        rawName,
        size: entry.uncompressedSize,
        compressedSize: entry.compressedSize,
        isDirectory: name.endsWith('/'),
        utf8: (entry.generalPurposeBitFlag & 0x800) !== 0,
        mode: (entry.externalFileAttributes >>> 16) & 0xffff,
        compressionMethod: entry.compressionMethod,
        encrypted: (entry.generalPurposeBitFlag & 0x1) !== 0,
        extraFields: entry.extraFields,
        entry,
      };
    }
  }

  openStream(entry: ZipEntry): Promise<Readable> {
    return new Promise((resolve, reject) => {
      this.zip.openReadStream(entry.entry, (error, stream) => {
        if (error || !stream) reject(new Error(`${this.path}: cannot read ${entry.name}: ${error?.message}`, { cause: error }));
        else resolve(stream);
      });
    });
  }

  close(): void {
    this.zip.close();
  }
}
