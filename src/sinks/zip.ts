/**
 * The zip sink: archiver's ZipArchive written to `<name>.partial` and renamed when complete.
 * Entries are appended one at a time, each waited for (archiver can stall with many live streams);
 * downloads finishing meanwhile wait in memory (small files, within a budget) or in a spool file
 * (large ones), so memory stays bounded. Every entry is given to archiver as a stream, so its
 * sizes follow it in a data descriptor: a Buffer entry is written into zip-stream whole, past its
 * backpressure, and when the disk was slower than the downloads those buffers piled up (a bench
 * zipping 20,000 entries of 20 KB from memory peaked at 757 MB; 151 MB with streams and
 * ZipOutput). Compressed types are stored, text deflated; zip64 is used by archiver when sizes
 * pass 4 GiB or entries 65,535. The manifest is the last entry.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { ZipArchive } from 'archiver';
import { Readable } from 'node:stream';
import type { EntryWriter, ExportSink } from './sink.js';
import { shouldDeflate } from './sink.js';
import { ZipOutput } from './zip-output.js';
import { digestOf, hashFile, type FileDigest } from '../util/hash-file.js';
import { MANIFEST_NAME, formatLine, sortLines, type ManifestLine } from './manifest.js';

/** Files up to this size wait for the zip in memory, while all of them fit in MEMORY_BUDGET. */
const MEMORY_LIMIT = 1024 * 1024;
const MEMORY_BUDGET = 16 * 1024 * 1024;
/** Spool files are written in batches of this size. */
const SPOOL_BATCH = 256 * 1024;
const DONE: Promise<void> = Promise.resolve();

export class ZipSink implements ExportSink {
  private readonly partial: string;
  private readonly spoolDir: string;
  private readonly archive: ZipArchive;
  private readonly output: ZipOutput;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private readonly lines: ManifestLine[] = [];
  private counter = 0;
  /** Bytes of files waiting in memory (expected sizes). */
  private inMemory = 0;
  private readonly date = new Date();

  private constructor(readonly target: string, file: FileHandle) {
    this.partial = `${target}.partial`;
    this.spoolDir = `${target}.partial.d`;
    this.archive = new ZipArchive({ zlib: { level: 6 } });
    this.output = new ZipOutput(file);
    this.archive.on('error', (error) => {
      this.failure = error;
    });
    this.archive.on('warning', (error) => {
      this.failure = error;
    });
    this.output.on('error', (error) => {
      this.failure = error;
    });
    this.archive.pipe(this.output);
  }

  static async create(file: string): Promise<ZipSink> {
    await mkdir(dirname(file) || '.', { recursive: true });
    await rm(`${file}.partial.d`, { recursive: true, force: true });
    await mkdir(`${file}.partial.d`);
    return new ZipSink(file, await open(`${file}.partial`, 'w'));
  }

  async intactFromEarlierRun(): Promise<Map<string, ManifestLine>> {
    return new Map();
  }

  /** Appends one entry and resolves when archiver has taken all of it. */
  private append(source: Readable, name: string): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.failure) throw this.failure;
      const entered = once(this.archive, 'entry');
      this.archive.append(source, { name, store: !shouldDeflate(name), date: this.date });
      await entered;
      if (this.failure) throw this.failure;
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  async open(path: string, expectedSize?: number): Promise<EntryWriter> {
    const reserved = expectedSize !== undefined && expectedSize <= MEMORY_LIMIT && this.inMemory + expectedSize <= MEMORY_BUDGET ? expectedSize : 0;
    const spool = expectedSize !== undefined && reserved === 0 && expectedSize > 0;
    this.inMemory += reserved;
    let released = false;
    const release = (): void => {
      if (!released) this.inMemory -= reserved;
      released = true;
    };
    this.counter += 1;
    const spoolPath = join(this.spoolDir, String(this.counter));
    let chunks: Buffer[] = [];
    let batchBytes = 0;
    let handle: FileHandle | null = spool ? await open(spoolPath, 'w') : null;
    // Spooled chunks go to disk in batches, not one write per 64 KB read.
    const flush = async (): Promise<void> => {
      const batch = chunks;
      chunks = [];
      batchBytes = 0;
      if (batch.length) await handle!.writev(batch);
    };
    return {
      write: (chunk) => {
        chunks.push(chunk);
        if (!handle) return DONE;
        batchBytes += chunk.length;
        return batchBytes >= SPOOL_BATCH ? flush() : DONE;
      },
      restart: async () => {
        chunks = [];
        batchBytes = 0;
        if (!handle) return;
        // Truncating keeps the write position: reopen, or the next bytes land after a hole.
        await handle.close();
        handle = await open(spoolPath, 'w');
      },
      commit: async (): Promise<FileDigest> => {
        if (!handle) {
          const data = chunks;
          chunks = [];
          try {
            // Small files, in memory: hashed here, which costs less than a trip to the hashing thread.
            const digest = digestOf(data);
            await this.append(Readable.from(data, { objectMode: false }), path);
            return digest;
          } finally {
            release();
          }
        }
        await flush();
        await handle.close();
        handle = null;
        const digest = await hashFile(spoolPath);
        await this.append(createReadStream(spoolPath), path);
        await rm(spoolPath, { force: true });
        return digest;
      },
      abort: async () => {
        chunks = [];
        release();
        if (handle) await handle.close();
        handle = null;
        await rm(spoolPath, { force: true });
      },
    };
  }

  async record(line: ManifestLine): Promise<void> {
    this.lines.push(line);
  }

  async finish(): Promise<void> {
    // Formatted a batch of lines at a time as archiver reads: the whole text of 20,000 lines
    // at once was some 15 MB at the end of the run.
    const sorted = sortLines(this.lines);
    this.lines.length = 0;
    await this.append(Readable.from(manifestChunks(sorted), { objectMode: false }), MANIFEST_NAME);
    const closed = once(this.output, 'close');
    await this.archive.finalize();
    await closed;
    if (this.failure) throw this.failure;
    await rename(this.partial, this.target);
    await rm(this.spoolDir, { recursive: true, force: true });
  }

  async abort(): Promise<void> {
    this.archive.abort();
    this.output.destroy();
    await rm(this.partial, { force: true });
    await rm(this.spoolDir, { recursive: true, force: true });
  }
}

function* manifestChunks(lines: ManifestLine[]): Generator<Buffer> {
  for (let i = 0; i < lines.length; i += 256) yield Buffer.from(lines.slice(i, i + 256).map(formatLine).join(''));
}
