/**
 * The `.partial` a stopped zip export left (DESIGN.md section 8), read by the next run: which file
 * to trust, its manifest, and its entries read back whole, each checked against its CRC-32, its
 * size and the manifest's sha256 before the new zip takes it.
 *
 * Only a zip with its central directory and its manifest entry is trusted. A run killed with
 * SIGKILL leaves neither: its entries could be found by their local headers, but the ones written
 * with a data descriptor (deflated and very large entries) cannot be proven whole that way, so
 * such a `.partial` is started over. A run stopped by a signal always leaves a complete one.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Readable } from 'node:stream';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { MANIFEST_NAME, checkManifestLine, type ManifestLine } from './manifest.js';
import { openManifestInOrder } from './manifest-order.js';
import { IntactLines } from './intact-lines.js';
import type { ManifestIndex } from './manifest-index.js';
import type { ExportSource } from './source.js';
import { doubledSlots, fnv1a, grown } from './hash-slots.js';
import { makeTempDir } from '../util/temp-dir.js';

/** The seed of an entry name's second hash. */
const SECOND_SEED = 0x01234567;

/** A source line is far shorter than this. */
const FIRST_LINE_LIMIT = 64 * 1024;

/** The source a manifest's line records, if it is a source line. */
function checkSource(text: string): ExportSource | undefined {
  const into: { problems: string[]; source?: ExportSource } = { problems: [] };
  checkManifestLine(text, 1, into);
  return into.source;
}

/**
 * Why a zip export may not replace the file at `path`, or null when it may: it is missing, empty,
 * or an export zip (a zip with its manifest entry), an earlier run's. Anything else is the user's:
 * a file that is no zip, or a zip of other things (or one too damaged to read its manifest).
 */
export async function foreignZipProblem(path: string): Promise<string | null> {
  const info = await stat(path).catch(() => null);
  if (!info?.isFile() || info.size === 0) return null;
  const head = Buffer.alloc(4);
  const handle = await open(path, 'r');
  try {
    await handle.read(head, 0, 4, 0);
  } finally {
    await handle.close();
  }
  const magic = head.toString('latin1');
  if (magic !== 'PK\x03\x04' && magic !== 'PK\x05\x06') return 'is a file that is not a zip archive';
  const earlier = await EarlierZip.open(path);
  if (!earlier) return `is a zip with no ${MANIFEST_NAME} (a zip of other files, or a damaged export)`;
  earlier.close();
  return null;
}

export class EarlierZip {
  /** Where the files came from, as the manifest records it; read by `intact` or `source`. */
  private recorded: Promise<ExportSource | undefined> | null = null;

  private constructor(
    private readonly zip: ZipFile,
    private readonly entries: EntryTable,
    private readonly manifestEntry: Entry,
    readonly path: string,
  ) {}

  /**
   * Finds the earlier run's zip beside `partial`: `partial` itself when it is complete (moved to
   * `previous`, so that the new zip can be written under its name), otherwise `previous`, which a
   * run killed while it wrote `partial` left in place. What cannot be trusted is removed.
   */
  static async takeOver(partial: string, previous: string): Promise<EarlierZip | null> {
    const current = await EarlierZip.open(partial);
    if (current) {
      current.close();
      await rename(partial, previous);
    } else {
      await rm(partial, { force: true });
    }
    const earlier = await EarlierZip.open(previous);
    if (!earlier) await rm(previous, { force: true });
    return earlier;
  }

  /** The zip at `path` with its entries, or null when it is missing, damaged or has no manifest. */
  static async open(path: string): Promise<EarlierZip | null> {
    const zip = await new Promise<ZipFile | null>((resolve) => {
      yauzl.open(path, { lazyEntries: true, autoClose: false, decodeStrings: true, validateEntrySizes: true }, (error, file) => resolve(error ? null : (file ?? null)));
    });
    if (!zip) return null;
    let manifest: Entry | undefined;
    const entries = await new Promise<EntryTable | null>((resolve) => {
      const found = new EntryTable();
      zip.on('entry', (entry: Entry) => {
        if (entry.fileName === MANIFEST_NAME) manifest = entry;
        else found.put(entry);
        zip.readEntry();
      });
      zip.on('end', () => resolve(found));
      zip.on('error', () => resolve(null));
      zip.readEntry();
    });
    if (!entries || !manifest) {
      zip.close();
      return null;
    }
    return new EarlierZip(zip, entries, manifest, path);
  }

  /**
   * The manifest's lines whose entry is in the zip with the size the line gives, in manifest order,
   * written to `dir` and answered by key from there (IntactLines); none when the manifest entry
   * cannot be read whole. Reads `source` too.
   */
  async intact(dir: string): Promise<ManifestIndex> {
    await mkdir(dir, { recursive: true });
    const copy = join(dir, 'earlier-manifest.jsonl');
    const writer = await IntactLines.create(join(dir, 'intact'));
    try {
      const read = await this.copyManifest(copy).then(() => true, () => false);
      if (read) {
        const manifest = await openManifestInOrder(dir, { file: copy });
        try {
          this.recorded ??= Promise.resolve(manifest.source);
          for await (const { line } of manifest.lines()) if (this.entries.sizeOf(line.path) === line.size) await writer.add(line);
        } finally {
          await manifest.close();
        }
      }
    } catch (error) {
      await writer.discard();
      throw error;
    } finally {
      await rm(copy, { force: true });
    }
    return writer.index();
  }

  /**
   * `intact` into a temporary folder of its own, for a reader that looks the lines up or reads
   * them in manifest order (`values()`) once, without holding them (a plan, a restore's check):
   * `close()` closes the index and removes the folder.
   */
  async intactInTemp(): Promise<{ index: ManifestIndex; close(): Promise<void> }> {
    const dir = await makeTempDir('zip-lines');
    try {
      const index = await this.intact(dir);
      return {
        index,
        close: async () => {
          index.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Where the zip's files came from, as its manifest's first line records it; undefined when it records none or cannot be read. */
  source(): Promise<ExportSource | undefined> {
    this.recorded ??= this.firstLine().then((text) => (text === null ? undefined : checkSource(text)), () => undefined);
    return this.recorded;
  }

  /** The manifest entry's first line, or null when it has none. */
  private async firstLine(): Promise<string | null> {
    const stream = await this.openEntry(this.manifestEntry);
    const parts: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        const end = chunk.indexOf(0x0a);
        parts.push(end < 0 ? chunk : chunk.subarray(0, end));
        size += chunk.length;
        if (end >= 0 || size > FIRST_LINE_LIMIT) return Buffer.concat(parts).toString('utf8');
      }
    } finally {
      stream.destroy();
    }
    return size > 0 ? Buffer.concat(parts).toString('utf8') : null;
  }

  /** Writes the manifest entry to `to`, checked against its CRC-32 and size as it is read. */
  private async copyManifest(to: string): Promise<void> {
    const entry = this.manifestEntry;
    const stream = await this.openEntry(entry);
    const handle = await open(to, 'w', 0o600);
    try {
      let at = 0;
      let crc = 0;
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        for (let written = 0; written < chunk.length; ) {
          const { bytesWritten } = await handle.write(chunk, written);
          if (bytesWritten === 0) throw new Error(`only ${written} of ${chunk.length} bytes were written to ${to}`);
          written += bytesWritten;
        }
        at += chunk.length;
        crc = crc32(chunk, crc);
      }
      if (at !== entry.uncompressedSize) throw new Error(`${entry.fileName}: ${at} of ${entry.uncompressedSize} bytes`);
      if (crc !== entry.crc32) throw new Error(`${entry.fileName}: CRC-32 differs`);
    } finally {
      await handle.close();
    }
  }

  /**
   * The bytes of `line`'s entry, read into `into` (its size), or null when they are not what the
   * zip and the manifest say: a CRC-32, size or sha256 that differs, or an entry yauzl refuses.
   */
  async readWhole(line: ManifestLine, into?: Buffer): Promise<Buffer | null> {
    const entry = this.entries.entry(line.path);
    if (!entry || entry.uncompressedSize !== line.size) return null;
    const data = await this.read(entry, into).catch(() => null);
    if (!data || createHash('sha256').update(data).digest('hex') !== line.sha256) return null;
    return data;
  }

  private openEntry(entry: Entry): Promise<Readable> {
    return new Promise<Readable>((resolve, reject) => {
      this.zip.openReadStream(entry, (error, opened) => (error || !opened ? reject(error ?? new Error('no stream')) : resolve(opened)));
    });
  }

  /** An entry's bytes, checked against its CRC-32 and size. */
  private async read(entry: Entry, into?: Buffer): Promise<Buffer> {
    const stream = await this.openEntry(entry);
    const buffer = into ?? Buffer.allocUnsafe(entry.uncompressedSize);
    let at = 0;
    let crc = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (at + chunk.length > buffer.length) throw new Error(`${entry.fileName}: longer than its declared ${entry.uncompressedSize} bytes`);
      chunk.copy(buffer, at);
      at += chunk.length;
      crc = crc32(chunk, crc);
    }
    if (at !== entry.uncompressedSize) throw new Error(`${entry.fileName}: ${at} of ${entry.uncompressedSize} bytes`);
    if (crc !== entry.crc32) throw new Error(`${entry.fileName}: CRC-32 differs`);
    return buffer.subarray(0, at);
  }

  close(): void {
    this.zip.close();
  }
}

/**
 * A zip's entries by name, in typed arrays: what reading one back needs (about 40 bytes an entry),
 * where yauzl's Entry objects took some 660 bytes each. Names are told apart by two 32-bit hashes;
 * two names of the same hashes would give the later entry for both, which its CRC-32, size and
 * the manifest's sha256 then refuse (the file is downloaded again).
 */
export class EntryTable {
  private count = 0;
  private hashA = new Uint32Array(1024);
  private hashB = new Uint32Array(1024);
  private offsets = new Float64Array(1024);
  private compressed = new Float64Array(1024);
  private sizes = new Float64Array(1024);
  private crcs = new Uint32Array(1024);
  private methods = new Uint16Array(1024);
  private flags = new Uint16Array(1024);
  /** Each name's entry plus one (0: empty), at the slot of its first hash or the next free one. */
  private slots = new Int32Array(2048);

  /** Keeps `entry` under `name` (its file name unless given: a zip read without decoding names has bytes there). */
  put(entry: Entry, name: string = entry.fileName): void {
    const a = fnv1a(name);
    const b = fnv1a(name, SECOND_SEED);
    const slot = this.slotOf(a, b);
    // A name given twice: the later entry, as a Map of names had it.
    const at = this.slots[slot]! > 0 ? this.slots[slot]! - 1 : this.add();
    this.hashA[at] = a;
    this.hashB[at] = b;
    this.offsets[at] = entry.relativeOffsetOfLocalHeader;
    this.compressed[at] = entry.compressedSize;
    this.sizes[at] = entry.uncompressedSize;
    this.crcs[at] = entry.crc32;
    this.methods[at] = entry.compressionMethod;
    this.flags[at] = entry.generalPurposeBitFlag;
    if (this.slots[slot] === 0) {
      this.slots[slot] = at + 1;
      if (2 * this.count > this.slots.length) this.growSlots();
    }
  }

  /** The uncompressed size of the entry named `name`, or -1 when there is none. */
  sizeOf(name: string): number {
    const at = this.find(name);
    return at < 0 ? -1 : this.sizes[at]!;
  }

  /** An Entry of yauzl's for the entry named `name`, made again from what the table kept. */
  entry(name: string): Entry | null {
    const at = this.find(name);
    if (at < 0) return null;
    return Object.assign(new yauzl.Entry(), {
      fileName: name, relativeOffsetOfLocalHeader: this.offsets[at]!, compressedSize: this.compressed[at]!, uncompressedSize: this.sizes[at]!,
      crc32: this.crcs[at]!, compressionMethod: this.methods[at]!, generalPurposeBitFlag: this.flags[at]!,
    });
  }

  private find(name: string): number {
    const entry = this.slots[this.slotOf(fnv1a(name), fnv1a(name, SECOND_SEED))]! - 1;
    return entry;
  }

  private slotOf(a: number, b: number): number {
    const mask = this.slots.length - 1;
    for (let at = a & mask; ; at = (at + 1) & mask) {
      const entry = this.slots[at]! - 1;
      if (entry < 0 || (this.hashA[entry] === a && this.hashB[entry] === b)) return at;
    }
  }

  private add(): number {
    if (this.count === this.hashA.length) {
      const n = 2 * this.count;
      this.hashA = grown(this.hashA, n);
      this.hashB = grown(this.hashB, n);
      this.offsets = grown(this.offsets, n);
      this.compressed = grown(this.compressed, n);
      this.sizes = grown(this.sizes, n);
      this.crcs = grown(this.crcs, n);
      this.methods = grown(this.methods, n);
      this.flags = grown(this.flags, n);
    }
    return this.count++;
  }

  private growSlots(): void {
    this.slots = doubledSlots(this.slots, (entry) => this.hashA[entry]!);
  }
}
