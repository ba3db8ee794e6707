/**
 * The zip sink: archiver's ZipArchive written to `<name>.partial` and renamed when complete.
 * Entries are appended one at a time, each waited for (archiver can stall with many live streams);
 * downloads finishing meanwhile wait in memory (small files, within a budget) or in a spool file
 * (large ones), so memory stays bounded. Compressed types are stored, text deflated; zip64 is used
 * by archiver when sizes pass 4 GiB or entries 65,535. The manifest is the last entry.
 *
 * A stored entry is given to archiver whole, as one Buffer, so that its local header carries its
 * CRC and sizes. Given as a stream, its sizes would follow it in a data descriptor, which the zip
 * format allows but streaming readers refuse for stored entries: Java's ZipInputStream ("only
 * DEFLATED entries can have EXT descriptor") and Apache Commons Compress by default, both common
 * in the HR systems a backup is fed to. archiver writes a Buffer entry into zip-stream at once,
 * past its backpressure (a bench zipping 20,000 entries of 20 KB from memory, appended without
 * waiting, peaked at 757 MB), so after each one the sink waits until the file's writer has taken
 * it. Entries of WHOLE_REUSE bytes or more are read into one buffer kept for the run, given back
 * when the writer has written that very buffer. A fresh 5 MB buffer per entry, freed only when the
 * garbage collector came round, took a zip of the 5 MB set at 20 ms from 143 to 160 MB (medians);
 * with the one buffer, 139-153 MB against 146-151 MB for streamed entries in runs taken in turn,
 * though bench/export put the zip at 131-132 MB (median of 3) before and 142-148 MB after, with
 * the pacing below. Deflated entries, and stored ones over WHOLE_LIMIT (the service keeps files to
 * 5 MB; older ones may be larger), go as streams, with a data descriptor.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { once } from 'node:events';
import { ZipArchive } from 'archiver';
import { Readable } from 'node:stream';
import type { EntryWriter, ExportSink } from './sink.js';
import { LargeFilePace } from '../stages/download.js';
import { removeEmptyDirs, shouldDeflate } from './sink.js';
import { ZipOutput } from './zip-output.js';
import { digestOf, hashFile, type FileDigest } from '../util/hash-file.js';
import { MANIFEST_NAME, formatLine, sortLines, type ManifestLine } from './manifest.js';

/** Files up to this size wait for the zip in memory, while all of them fit in MEMORY_BUDGET. */
const MEMORY_LIMIT = 1024 * 1024;
const MEMORY_BUDGET = 16 * 1024 * 1024;
/** Spool files are written in batches of this size. */
const SPOOL_BATCH = 256 * 1024;
/** Stored entries up to this size are given to archiver whole (sizes in the local header). */
const WHOLE_LIMIT = 16 * 1024 * 1024;
/**
 * Downloads at once while files too large to wait in memory are on their way into the zip (the
 * export's concurrency otherwise). The zip takes one entry at a time, slower than 16 connections
 * bring large files in; the extra downloads only competed with it for the CPU and held more read
 * buffers. A zip of the 5 MB set at 20 ms, eight runs each taken in turn: 3.74 s and 145/162 MB
 * (median/max peak) at 16, 3.34 s and 142/149 MB at 8, 3.44 s and 145/158 MB at 6.
 */
const LARGE_FILE_CONNECTIONS = 8;
/** Stored entries of this size or more are read into a buffer kept for the run. */
const WHOLE_REUSE = 64 * 1024;
/** Buffers kept for whole entries (two, one written while the next is read, peaked higher). */
const WHOLE_BUFFERS = 1;

export class ZipSink implements ExportSink {
  private readonly partial: string;
  private readonly spoolDir: string;
  /** The first folder `create` made for the zip, if its folder was not there. */
  private createdFrom: string | undefined;
  private readonly archive: ZipArchive;
  private readonly output: ZipOutput;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private readonly lines: ManifestLine[] = [];
  private counter = 0;
  /** Bytes of files waiting in memory (expected sizes). */
  private inMemory = 0;
  private readonly date = new Date();
  /** Buffers for whole entries that are free, and how many exist. */
  private readonly wholeFree: Buffer[] = [];
  private wholeCount = 0;
  private wholeWaiting: (() => void) | null = null;
  /** Paces the downloads while spool files are open or waiting for the zip. */
  readonly starts = new LargeFilePace(LARGE_FILE_CONNECTIONS);

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
    // Made from the absolute path: what mkdir answers is then the zip's folder or a parent of it.
    const createdFrom = await mkdir(dirname(resolve(file)), { recursive: true });
    await rm(`${file}.partial.d`, { recursive: true, force: true });
    await mkdir(`${file}.partial.d`);
    const sink = new ZipSink(file, await open(`${file}.partial`, 'w'));
    sink.createdFrom = createdFrom;
    return sink;
  }

  async intactFromEarlierRun(): Promise<Map<string, ManifestLine>> {
    return new Map();
  }

  /**
   * Appends one entry and resolves when archiver has taken all of it: a stream when it has been
   * read to its end, a Buffer (a stored entry) when the file's writer has taken it.
   */
  private append(source: Readable | Buffer, name: string): Promise<void> {
    return this.step(() => this.appendNow(source, name));
  }

  /** Runs `work` after the entries before it, one entry at a time. */
  private step(work: () => Promise<void>): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.failure) throw this.failure;
      await work();
      if (this.failure) throw this.failure;
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async appendNow(source: Readable | Buffer, name: string): Promise<void> {
    const entered = once(this.archive, 'entry');
    const before = this.output.accepted;
    this.archive.append(source, { name, store: !shouldDeflate(name), date: this.date });
    await entered;
    if (Buffer.isBuffer(source)) await this.output.whenAccepted(before + source.length);
  }

  /**
   * Appends a stored entry of `size` bytes whole, filled by `fill` into a buffer kept for the run
   * when its turn comes (not while it waits for the entries before it).
   */
  private appendWhole(size: number, name: string, fill: (into: Buffer) => Promise<void>): Promise<void> {
    return this.step(async () => {
      const reuse = size >= WHOLE_REUSE;
      const buffer = reuse ? await this.wholeBuffer(size) : Buffer.allocUnsafe(size);
      const entry = buffer.subarray(0, size);
      let given = false;
      try {
        await fill(entry);
        given = true;
        await this.appendNow(entry, name);
      } finally {
        // Back once the writer has written this very buffer. Should it reach the writer as another
        // object (a copy), or the zip fail, it is not used again and the next entry makes its own.
        if (reuse) void (given ? this.output.whenWritten(entry) : Promise.resolve(true)).then((free) => this.giveBack(buffer, free));
      }
    });
  }

  private giveBack(buffer: Buffer, free: boolean): void {
    if (free) this.wholeFree.push(buffer);
    else this.wholeCount -= 1;
    const waiting = this.wholeWaiting;
    this.wholeWaiting = null;
    waiting?.();
  }

  /** A free buffer of at least `size` bytes, waiting for one when all are being written. */
  private async wholeBuffer(size: number): Promise<Buffer> {
    for (;;) {
      const free = this.wholeFree.pop();
      if (free && free.length >= size) return free;
      if (free) this.wholeCount -= 1; // Too small for this entry: let it go.
      if (this.wholeCount < WHOLE_BUFFERS) {
        this.wholeCount += 1;
        return Buffer.allocUnsafeSlow(Math.max(size, WHOLE_REUSE));
      }
      await new Promise<void>((resolve) => (this.wholeWaiting = resolve));
    }
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
    if (spool) this.starts.enter();
    let spooled = spool;
    const spoolGone = (): void => {
      if (!spooled) return;
      spooled = false;
      this.starts.leave();
    };
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
        if (!handle) return undefined;
        batchBytes += chunk.length;
        return batchBytes >= SPOOL_BATCH ? flush() : undefined;
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
            if (shouldDeflate(path)) await this.append(Readable.from(data, { objectMode: false }), path);
            else if (data.length === 1) await this.append(data[0]!, path);
            else {
              await this.appendWhole(digest.size, path, async (into) => {
                let at = 0;
                for (const chunk of data.splice(0)) at += chunk.copy(into, at);
              });
            }
            return digest;
          } finally {
            release();
          }
        }
        try {
          await flush();
          await handle.close();
          handle = null;
          const digest = await hashFile(spoolPath);
          if (shouldDeflate(path) || digest.size > WHOLE_LIMIT) await this.append(createReadStream(spoolPath), path);
          else await this.appendWhole(digest.size, path, (into) => readInto(spoolPath, into));
          await rm(spoolPath, { force: true });
          return digest;
        } finally {
          spoolGone();
        }
      },
      abort: async () => {
        chunks = [];
        release();
        spoolGone();
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
    // A run that failed leaves no folder it made for the zip.
    await removeEmptyDirs(dirname(resolve(this.target)), this.createdFrom);
  }
}

/** Reads the whole file at `path` into `into`, which is its size. */
async function readInto(path: string, into: Buffer): Promise<void> {
  const handle = await open(path, 'r');
  try {
    let at = 0;
    while (at < into.length) {
      const { bytesRead } = await handle.read(into, at, into.length - at, at);
      if (bytesRead === 0) throw new Error(`${path} ended after ${at} of ${into.length} bytes`);
      at += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

function* manifestChunks(lines: ManifestLine[]): Generator<Buffer> {
  for (let i = 0; i < lines.length; i += 256) yield Buffer.from(lines.slice(i, i + 256).map(formatLine).join(''));
}
