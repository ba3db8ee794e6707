/**
 * A zip as an import source (DESIGN.md section 5). yauzl is opened with `decodeStrings: false`, so
 * each entry is judged here and one bad entry is refused while the others are read:
 * - names: the Info-ZIP Unicode Path field, else UTF-8 (flagged, or valid bytes), else Shift_JIS
 *   holding Japanese (zips made on Japanese Windows), else refused; backslashes are separators;
 * - entries that escape the root (absolute, a drive letter, `..`), links, encrypted entries and
 *   compression methods other than stored and deflate are refused;
 * - zip bombs: an entry declaring more than `maxEntryBytes` (default 64 MB), or compressed more
 *   than 100:1 beyond 1 MB, is refused without being inflated, and reading stops where the
 *   declared size ends;
 * - each entry's CRC-32 and sizes are checked as it is read (zip-reader.ts): one that differs
 *   fails to read with the reason (`bad CRC-32`, `size differs from the size the zip declares`),
 *   so the import refuses it when it checks the file, before anything is sent;
 * - directories, dotfiles, `__MACOSX/`, `Thumbs.db` and a root `manifest.jsonl` are skipped.
 * Entries come in the order of the central directory. A zip that cannot be read at all (not a zip,
 * truncated) is a fatal error naming the file.
 */
import { crc32 } from 'node:zlib';
import { TextDecoder } from 'node:util';
import type { ImportSource, SourceEntry, SourceFile } from './source.js';
import { ZipReader, type ZipEntry } from './zip-reader.js';
import { MANIFEST_FILE, errorAbout, isSkippedSegment, readLimited } from './file-rules.js';
import { LINK_REFUSED } from './folder.js';

/** Default cap on one entry's declared uncompressed size. */
export const DEFAULT_MAX_ENTRY_BYTES = 64 * 1024 * 1024;
/** Compression ratios above this are refused for entries larger than RATIO_FREE_BYTES. */
export const MAX_COMPRESSION_RATIO = 100;
export const RATIO_FREE_BYTES = 1024 * 1024;

export interface ZipSourceOptions {
  /** Entries declaring more uncompressed bytes are refused without being inflated. Default 64 MB. */
  maxEntryBytes?: number;
}

export type EntryVerdict =
  | { kind: 'skip' }
  | { kind: 'refuse'; relPath: string; reason: string; /** The path is the file's real name. */ named?: true }
  | { kind: 'take'; relPath: string };

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;
const UNICODE_PATH_FIELD = 0x7075;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const shiftJis = new TextDecoder('shift_jis', { fatal: true });
const lenient = new TextDecoder('utf-8');
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function tryDecode(decoder: TextDecoder, bytes: Buffer): string | null {
  try {
    return decoder.decode(bytes);
  } catch {
    return null;
  }
}

/** The Info-ZIP Unicode Path extra field, used only when its CRC matches the header's name bytes. */
function unicodePath(entry: ZipEntry): string | null {
  const field = entry.extraFields.find((f) => f.id === UNICODE_PATH_FIELD);
  if (!field || field.data.length < 6 || field.data[0] !== 1) return null;
  if (field.data.readUInt32LE(1) !== crc32(entry.rawName)) return null;
  return tryDecode(utf8, field.data.subarray(5));
}

/** The entry's name, or why it cannot be decoded. */
export function decodeEntryName(entry: ZipEntry): { name: string } | { reason: string } {
  const fromField = unicodePath(entry);
  if (fromField !== null) return { name: fromField };
  const asUtf8 = tryDecode(utf8, entry.rawName);
  if (asUtf8 !== null) return { name: asUtf8 };
  if (entry.utf8) return { reason: 'the name is flagged UTF-8 but its bytes are not valid UTF-8' };
  const asShiftJis = tryDecode(shiftJis, entry.rawName);
  if (asShiftJis !== null && looksJapanese(asShiftJis)) return { name: asShiftJis };
  return { reason: NOT_UTF8_NOR_SJIS };
}

export const NOT_UTF8_NOR_SJIS = 'the name is neither UTF-8 nor Shift_JIS (a zip made on Windows in another language keeps names in its own code page; zip it again with UTF-8 names, as 7-Zip does)';

/**
 * Whether a Shift_JIS reading holds Japanese: kana, kanji or full-width letters and digits. Most
 * bytes of other Windows code pages read as Shift_JIS too (CP437's `Müller` as `M〕ler`, `Señor`
 * as `Se､or`), but as punctuation rather than words; such a name is refused, not renamed.
 */
function looksJapanese(name: string): boolean {
  return /[\u3041-\u30ff\u3400-\u9fff\uf900-\ufaff\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff66-\uff9f]/u.test(name);
}

/** Why an entry's declared sizes make it a likely zip bomb, or null. */
export function bombReason(entry: ZipEntry, maxEntryBytes: number): string | null {
  if (entry.size > maxEntryBytes) return `declares ${entry.size} bytes uncompressed, over the limit of ${maxEntryBytes} bytes; not inflated`;
  if (entry.size > RATIO_FREE_BYTES && entry.size > entry.compressedSize * MAX_COMPRESSION_RATIO) {
    const ratio = entry.compressedSize === 0 ? 'infinite' : `${Math.round(entry.size / entry.compressedSize)}:1`;
    return `compressed ${ratio} (${entry.compressedSize} bytes to ${entry.size}), over ${MAX_COMPRESSION_RATIO}:1 beyond 1 MB: a likely zip bomb; not inflated`;
  }
  return null;
}

export interface JudgeOptions {
  maxEntryBytes: number;
  /** Skip dotfiles, `__MACOSX/` and `Thumbs.db`. Default true; an export's manifest names its files itself. */
  skipJunk?: boolean;
}

/** Whether an entry is taken, skipped or refused, and its `/`-separated path inside the zip. */
export function judgeEntry(entry: ZipEntry, options: JudgeOptions): EntryVerdict {
  const decoded = decodeEntryName(entry);
  if ('reason' in decoded) return { kind: 'refuse', relPath: lenient.decode(entry.rawName), reason: decoded.reason };
  // Zips made on Windows may separate with backslashes (APPNOTE 4.4.17 says `/`, some tools differ).
  const name = decoded.name.replace(/\\/g, '/').normalize('NFC');
  const kind = entry.mode & S_IFMT;
  if (name.endsWith('/') || kind === S_IFDIR) return { kind: 'skip' };
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return { kind: 'refuse', relPath: name, reason: 'the path is absolute; entries must stay inside the zip' };
  const segments = name.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) return { kind: 'refuse', relPath: name, reason: 'the path goes up with `..`; entries must stay inside the zip' };
  const relPath = segments.join('/');
  if (CONTROL.test(relPath)) return { kind: 'refuse', relPath, reason: 'the name holds control characters' };
  if (options.skipJunk !== false && segments.some(isSkippedSegment)) return { kind: 'skip' };
  if (kind === S_IFLNK) return { kind: 'refuse', relPath, reason: LINK_REFUSED, named: true };
  if (entry.encrypted) return { kind: 'refuse', relPath, reason: 'is encrypted; encrypted entries cannot be read', named: true };
  if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
    return { kind: 'refuse', relPath, reason: `uses compression method ${entry.compressionMethod}; only stored and deflated entries can be read`, named: true };
  }
  const bomb = bombReason(entry, options.maxEntryBytes);
  if (bomb) return { kind: 'refuse', relPath, reason: bomb, named: true };
  return { kind: 'take', relPath };
}

/** A taken entry as a SourceFile: inflated only when read or opened. */
export function zipFile(reader: ZipReader, entry: ZipEntry, where: string, fields: Omit<SourceFile, 'where' | 'size' | 'read' | 'open'>): SourceFile {
  const open = async () => {
    try {
      return await reader.openStream(entry);
    } catch (error) {
      // ZipReader names the zip and the raw entry name; `where` says both already.
      throw errorAbout(where, (error as Error).cause ?? error);
    }
  };
  return { ...fields, where, size: entry.size, open, read: (maxBytes, into) => readLimited(where, entry.size, maxBytes, open, into) };
}

/** Opens a zip as every import source does: raw names (each entry's CRC-32 and sizes are checked as it is read). */
export const openZipReader = (path: string): Promise<ZipReader> => ZipReader.open(path, { decodeStrings: false });

export class ZipSource implements ImportSource {
  private readonly readers: ZipReader[] = [];
  /** The reader opened by `open`, for the first pass. */
  private spare: ZipReader | null = null;
  private readonly maxEntryBytes: number;

  private constructor(
    /** The zip as the user named it. */
    readonly label: string,
    options: ZipSourceOptions,
  ) {
    this.maxEntryBytes = options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
  }

  /** Opens the zip now, so that one that cannot be read fails here, naming the file. */
  static async open(path: string, options: ZipSourceOptions = {}): Promise<ZipSource> {
    const source = new ZipSource(path, options);
    source.spare = await openZipReader(path);
    source.readers.push(source.spare);
    return source;
  }

  /** Each pass has its own reader (yauzl reads the central directory once); files stay readable until close. */
  private async reader(): Promise<ZipReader> {
    const spare = this.spare;
    this.spare = null;
    if (spare) return spare;
    const reader = await openZipReader(this.label);
    this.readers.push(reader);
    return reader;
  }

  async *entries(): AsyncGenerator<SourceEntry> {
    const reader = await this.reader();
    for await (const entry of reader.entries()) {
      const verdict = judgeEntry(entry, { maxEntryBytes: this.maxEntryBytes });
      if (verdict.kind === 'skip' || (verdict.kind === 'take' && verdict.relPath === MANIFEST_FILE)) continue;
      const where = `${this.label}:${verdict.relPath}`;
      if (verdict.kind === 'refuse') {
        const fileName = verdict.named ? verdict.relPath.slice(verdict.relPath.lastIndexOf('/') + 1) : undefined;
        yield { kind: 'refused', refused: { where, relPath: verdict.relPath, reason: verdict.reason, fileName } };
        continue;
      }
      const fileName = verdict.relPath.slice(verdict.relPath.lastIndexOf('/') + 1);
      yield { kind: 'file', file: zipFile(reader, entry, where, { relPath: verdict.relPath, fileName }) };
    }
  }

  async close(): Promise<void> {
    this.spare = null;
    for (const reader of this.readers.splice(0)) reader.close();
  }
}
