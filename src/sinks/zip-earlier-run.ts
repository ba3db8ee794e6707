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
import { open, rename, rm, stat } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type { Readable } from 'node:stream';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { MANIFEST_NAME, parseManifest, type ManifestLine, type ManifestLines } from './manifest.js';
import type { ExportSource } from './source.js';

/** Manifests larger than this are not read back (20,000 lines take some 6 MB). */
const MANIFEST_LIMIT = 256 * 1024 * 1024;

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
  private constructor(
    private readonly zip: ZipFile,
    private readonly entries: Map<string, Entry>,
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
    const entries = await new Promise<Map<string, Entry> | null>((resolve) => {
      const found = new Map<string, Entry>();
      zip.on('entry', (entry: Entry) => {
        found.set(entry.fileName, entry);
        zip.readEntry();
      });
      zip.on('end', () => resolve(found));
      zip.on('error', () => resolve(null));
      zip.readEntry();
    });
    if (!entries || !entries.has(MANIFEST_NAME)) {
      zip.close();
      return null;
    }
    return new EarlierZip(zip, entries, path);
  }

  /**
   * The manifest's lines whose entry is in the zip with the size the line gives; empty when the
   * manifest entry cannot be read whole.
   */
  async lines(): Promise<ManifestLine[]> {
    const manifest = await this.manifest();
    const lines: ManifestLine[] = [];
    for (const line of manifest?.lines.values() ?? []) {
      if (this.entries.get(line.path)?.uncompressedSize === line.size) lines.push(line);
    }
    return lines;
  }

  /** Where the zip's files came from, as its manifest records it; undefined when it records none or cannot be read. */
  async source(): Promise<ExportSource | undefined> {
    return (await this.manifest())?.source;
  }

  private parsed: Promise<ManifestLines | null> | null = null;

  /** The manifest entry, parsed once; null when it cannot be read whole. */
  private manifest(): Promise<ManifestLines | null> {
    this.parsed ??= (async () => {
      const entry = this.entries.get(MANIFEST_NAME)!;
      if (entry.uncompressedSize > MANIFEST_LIMIT) return null;
      const data = await this.read(entry).catch(() => null);
      return data ? parseManifest(data.toString('utf8')) : null;
    })();
    return this.parsed;
  }

  /**
   * The bytes of `line`'s entry, read into `into` (its size), or null when they are not what the
   * zip and the manifest say: a CRC-32, size or sha256 that differs, or an entry yauzl refuses.
   */
  async readWhole(line: ManifestLine, into?: Buffer): Promise<Buffer | null> {
    const entry = this.entries.get(line.path);
    if (!entry || entry.uncompressedSize !== line.size) return null;
    const data = await this.read(entry, into).catch(() => null);
    if (!data || createHash('sha256').update(data).digest('hex') !== line.sha256) return null;
    return data;
  }

  /** An entry's bytes, checked against its CRC-32 and size. */
  private async read(entry: Entry, into?: Buffer): Promise<Buffer> {
    const stream = await new Promise<Readable>((resolve, reject) => {
      this.zip.openReadStream(entry, (error, opened) => (error || !opened ? reject(error ?? new Error('no stream')) : resolve(opened)));
    });
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
