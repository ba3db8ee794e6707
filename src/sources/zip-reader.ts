/**
 * Reading zips with yauzl (DESIGN.md section 7): lazy entries, so memory does not grow with the
 * archive; raw name bytes kept (Shift_JIS names are decoded by the import sources). With
 * `decodeStrings: true` yauzl stops the whole archive at the first name that escapes the root; the
 * import sources open with `decodeStrings: false` and judge each name themselves (zip.ts), so one
 * bad entry is refused and the others are still read.
 *
 * Every entry is checked as it is read (DESIGN.md section 8, "Zip entries are checked"). yauzl
 * checks little of it: with `validateEntrySizes` it compares a deflated entry's output with the
 * declared size and, when it lists a stored entry whose two sizes differ, fails the whole archive;
 * it never checks the CRC-32 and ignores the local header. So yauzl's size check is off, and
 * `openStream` checks, for that one entry: a stored entry's two sizes, the local header's CRC-32
 * and sizes against the central directory (unless they are in a data descriptor), the bytes read
 * against the declared size (stopping as soon as there are more) and their CRC-32. The last chunk
 * is held back until the checks pass, so a reader never has the whole of a bad entry.
 */
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { Transform, pipeline, type Readable, type TransformCallback } from 'node:stream';
import { crc32, createInflateRaw } from 'node:zlib';

/** The reasons a zip entry is refused, as reports show them. */
export const BAD_CRC = 'bad CRC-32';
export const SIZE_DIFFERS = 'size differs from the size the zip declares';

/** Sizes of 0xFFFFFFFF in a local header stand for zip64 sizes in its extra field. */
const ZIP64_MARK = 0xffffffff;
/** General purpose bit 3: CRC-32 and sizes follow the data, and the local header holds zeros. */
const DATA_DESCRIPTOR = 0x8;

const hex = (n: number): string => `0x${n.toString(16).padStart(8, '0')}`;

/** An entry whose bytes are not what the zip declares; its message starts with the reason. */
export class ZipEntryError extends Error {}

interface LocalHeader {
  generalPurposeBitFlag: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
}

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
  /** The CRC-32 the central directory declares. */
  crc32: number;
  entry: Entry;
}

export class ZipReader {
  private constructor(private readonly zip: ZipFile, readonly path: string) {}

  static open(path: string, options: { decodeStrings?: boolean } = {}): Promise<ZipReader> {
    return new Promise((resolve, reject) => {
      // Sizes are checked per entry in openStream (see above), not by yauzl for the whole archive.
      yauzl.open(path, { lazyEntries: true, autoClose: false, decodeStrings: options.decodeStrings ?? true, validateEntrySizes: false }, (error, zip) => {
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
    for (let read = 0; ; read += 1) {
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
          // The central directory lists every entry: past a damaged one, none can be trusted.
          reject(new Error(`${this.path}: not a readable zip: its list of entries is damaged after ${read} of the ${zip.entryCount} it declares (${err.message})`));
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
        crc32: entry.crc32,
        entry,
      };
    }
  }

  /**
   * The entry's bytes, checked against what the zip declares: rejects (ZipEntryError) when the
   * headers disagree, and the stream fails with a ZipEntryError when the bytes do.
   */
  async openStream(entry: ZipEntry): Promise<Readable> {
    if (!this.zip.isOpen) throw new Error(`${this.path}: cannot read ${entry.name}: closed`, { cause: new Error('closed') });
    const declared = await this.declaredProblem(entry);
    if (declared) throw new ZipEntryError(declared);
    // The bytes as stored: a deflated entry is inflated here, so that yauzl's stream is only ever read from the file.
    const options = { decompress: entry.compressionMethod === 8 ? false : null, decrypt: null, start: null, end: null };
    const raw = await new Promise<Readable>((resolve, reject) => {
      this.zip.openReadStream(entry.entry, options, (error, stream) => {
        if (error || !stream) reject(new Error(`${this.path}: cannot read ${entry.name}: ${error?.message}`, { cause: error }));
        else resolve(stream);
      });
    });
    const checked = new EntryCheck(entry.size, entry.crc32);
    const first = entry.compressionMethod === 8 ? createInflateRaw() : checked;
    raw.on('error', (error) => first.destroy(error));
    raw.pipe(first);
    // yauzl's stream must not be destroyed before its end: its file reads are queued one at a time
    // across the zip, and a destroyed stream's queued read then fails outside any callback
    // (TypeError reading 'fd'), ending the process. So when the check fails or the reader stops,
    // the rest of the stored bytes are read and dropped; the zip stays open until then.
    const drain = (): void => {
      raw.unpipe(first);
      raw.resume();
    };
    if (first === checked) {
      checked.once('close', drain);
      return checked;
    }
    // Errors of either (a zlib error, a failed check) end both and reach the reader through `checked`.
    return pipeline(first, checked, drain);
  }

  /** Why the headers of an entry disagree on its CRC-32 or sizes, or null. */
  private async declaredProblem(entry: ZipEntry): Promise<string | null> {
    if (entry.compressionMethod === 0 && entry.compressedSize !== entry.size) {
      return `${SIZE_DIFFERS} (stored without compression, yet ${entry.compressedSize} bytes in the zip for ${entry.size} declared)`;
    }
    const local = await this.localHeader(entry);
    // Sizes in a data descriptor leave zeros here; some writers leave zeros without saying so.
    if (local.generalPurposeBitFlag & DATA_DESCRIPTOR) return null;
    if (local.crc32 === 0 && local.compressedSize === 0 && local.uncompressedSize === 0) return null;
    if (local.crc32 !== entry.crc32) return `${BAD_CRC} (the local header says ${hex(local.crc32)}, the central directory ${hex(entry.crc32)})`;
    for (const [what, inLocal, inCentral] of [['compressed', local.compressedSize, entry.compressedSize], ['uncompressed', local.uncompressedSize, entry.size]] as const) {
      if (inLocal !== ZIP64_MARK && inLocal !== inCentral) return `${SIZE_DIFFERS} (the local header says ${inLocal} bytes ${what}, the central directory ${inCentral})`;
    }
    return null;
  }

  private localHeader(entry: ZipEntry): Promise<LocalHeader> {
    // Part of yauzl's API since 3.0, missing from its type definitions.
    const zip = this.zip as ZipFile & { readLocalFileHeader(e: Entry, o: { minimal: boolean }, cb: (err: Error | null, header: LocalHeader) => void): void };
    return new Promise((resolve, reject) => {
      zip.readLocalFileHeader(entry.entry, { minimal: false }, (error, header) => {
        if (error) reject(new Error(`${this.path}: cannot read ${entry.name}: ${error.message}`, { cause: error }));
        else resolve(header);
      });
    });
  }

  close(): void {
    this.zip.close();
  }
}

/**
 * Counts the bytes of an entry and their CRC-32 as they pass. More bytes than declared fail at
 * once; fewer, or another CRC-32, fail at the end, before the last chunk is handed on.
 */
class EntryCheck extends Transform {
  private bytes = 0;
  private crc = 0;
  private held: Buffer | null = null;

  constructor(
    private readonly size: number,
    private readonly expectedCrc: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.size) {
      done(new ZipEntryError(`${SIZE_DIFFERS} (more than the ${this.size} bytes declared)`));
      return;
    }
    this.crc = crc32(chunk, this.crc);
    const before = this.held;
    this.held = chunk;
    done(null, before ?? undefined);
  }

  override _flush(done: TransformCallback): void {
    if (this.bytes !== this.size) {
      done(new ZipEntryError(`${SIZE_DIFFERS} (${this.bytes} bytes read, ${this.size} declared)`));
    } else if (this.crc !== this.expectedCrc) {
      done(new ZipEntryError(`${BAD_CRC} (the bytes read give ${hex(this.crc)}, the zip declares ${hex(this.expectedCrc)})`));
    } else {
      done(null, this.held ?? undefined);
    }
  }
}
