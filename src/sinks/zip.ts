/**
 * The zip sink: archiver's ZipArchive written to `<name>.partial` and renamed when complete.
 * Entries are appended one at a time, each waited for (archiver can stall with many live streams);
 * downloads finishing meanwhile wait in memory (files up to 1 MB, in blocks used again, within a
 * budget: past it a download waits with its body unread) or in a spool file (larger ones), and no
 * download starts while 16 files wait, so memory stays bounded. Compressed types are stored, text
 * deflated; zip64 is used by archiver when sizes pass 4 GiB or entries 65,535. The manifest is the
 * last entry.
 *
 * A stored entry is given to archiver whole, as one Buffer, so that its local header carries its
 * CRC and sizes. Given as a stream, its sizes would follow it in a data descriptor, which the zip
 * format allows but streaming readers refuse for stored entries: Java's ZipInputStream ("only
 * DEFLATED entries can have EXT descriptor") and Apache Commons Compress by default, both common
 * in the HR systems a backup is fed to. archiver writes a Buffer entry into zip-stream at once,
 * past its backpressure, so after each one the sink waits until the file's writer has taken it.
 * Entries of WHOLE_REUSE bytes or more are read into one buffer kept for the run, given back when
 * the writer has written that very buffer: a fresh buffer per entry lives until the garbage
 * collector comes round, and large ones add up. Deflated entries, and stored ones over WHOLE_LIMIT (the service keeps files to
 * 5 MB; older ones may be larger), go as streams, with a data descriptor.
 *
 * A run stopped by a signal (`pause`) completes the zip as `<name>.partial`. The next run moves it
 * to `<name>.partial.prev`, copies the entries it keeps from there into its own `.partial` (each
 * checked, see zip-earlier-run.ts), and removes `.prev` only once its own zip is complete, as
 * `.partial` or as the zip: a run killed meanwhile loses nothing the first one fetched. With no
 * `.partial`, a rerun copies in the same way from the complete zip at `<name>`, which its own zip
 * replaces by a rename once complete.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { once } from 'node:events';
import { ZipArchive } from 'archiver';
import { Readable } from 'node:stream';
import type { EntryWriter, ExportSink } from './sink.js';
import { LargeFilePace, ZIP_LARGE_FILE_CONNECTIONS, ZIP_WAITING_ENTRIES, type StartGate } from '../util/pacing.js';
import { removeEmptyDirs, shouldDeflate } from './sink.js';
import { ZipOutput } from './zip-output.js';
import { digestOf, hashFile, type FileDigest } from '../util/hash-file.js';
import { MANIFEST_NAME, compareLines, type ManifestLine } from './manifest.js';
import { writeSortedManifest } from './manifest-sort.js';
import { sourceLineText, type ExportSource } from './source.js';
import { EarlierZip } from './zip-earlier-run.js';
import type { ManifestIndex } from './manifest-index.js';
import { SpilledCentralDirectory } from './zip-central.js';
import { readLines } from '../util/line-reader.js';
import { LineFile } from './line-file.js';
import { mapInOrder } from '../util/map-in-order.js';

/** Files up to this size wait for the zip in memory, in blocks of WaitingBlocks (MEMORY_BUDGET). */
const MEMORY_LIMIT = 1024 * 1024;
const MEMORY_BUDGET = 16 * 1024 * 1024;
/** The smallest block a file waits in. */
const SMALLEST_BLOCK = 16 * 1024;
/** Spool files are written in batches of this size. */
const SPOOL_BATCH = 256 * 1024;
/** Stored entries up to this size are given to archiver whole (sizes in the local header). */
const WHOLE_LIMIT = 16 * 1024 * 1024;
/** An earlier zip's entries of at most this size are read ahead of their turn, READ_AHEAD_ENTRIES at most (a few MB held). */
const READ_AHEAD_BYTES = 256 * 1024;
const READ_AHEAD_ENTRIES = 16;
const READ_AHEAD_READS = 4;
/** Stored entries of this size or more are read into a buffer kept for the run. */
const WHOLE_REUSE = 64 * 1024;
/** Buffers kept for whole entries (two, one written while the next is read, peaked higher). */
const WHOLE_BUFFERS = 1;

export class ZipSink implements ExportSink {
  private readonly partial: string;
  private readonly previous: string;
  private readonly spoolDir: string;
  /** The zip an earlier, stopped run left, or the complete one at the target, read from by `keep`. */
  private earlier: EarlierZip | null = null;
  /** The lines of `earlier` whose entries are there, on disk in the spool folder; read by `intactFromEarlierRun` or `carryOver`. */
  private intact: ManifestIndex | null = null;
  /** `earlier` is the complete zip at the target: left where it is whatever becomes of this run. */
  private earlierIsTarget = false;
  /** Whether `keep` copied every entry it was given (the new zip then holds all the earlier did). */
  private keptAll = false;
  /** The first folder `create` made for the zip, if its folder was not there. */
  private createdFrom: string | undefined;
  private readonly archive: ZipArchive;
  private readonly output: ZipOutput;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  /** The manifest lines of the entries appended, kept in the spool folder until the manifest is written. */
  private readonly lines: LineFile;
  /** The central directory, kept in the spool folder until the zip is completed. */
  private readonly central: SpilledCentralDirectory;
  private counter = 0;
  /** Memory for files waiting for their turn. */
  private readonly waiting = new WaitingBlocks(MEMORY_BUDGET);
  private readonly date = new Date();
  /** Buffers for whole entries that are free, and how many exist. */
  private readonly wholeFree: Buffer[] = [];
  private wholeCount = 0;
  private wholeWaiting: (() => void) | null = null;
  /** Paces the downloads while spool files are open or waiting for the zip. */
  private readonly pace = new LargeFilePace(ZIP_LARGE_FILE_CONNECTIONS);
  /** Entries waiting for their turn or being appended. */
  private queued = 0;
  private readonly startListeners: (() => void)[] = [];
  /**
   * Holds new downloads back while ZIP_WAITING_ENTRIES files wait for the zip, besides the pace of
   * large files: the zip is then behind, and each download under way keeps objects that outlive
   * young-generation collections while it waits.
   */
  readonly starts: StartGate = {
    open: (connections) => (this.queued < ZIP_WAITING_ENTRIES || connections === 0) && this.pace.open(connections),
    onOpen: (listener) => {
      this.pace.onOpen(listener);
      this.startListeners.push(listener);
    },
  };

  private constructor(readonly target: string, file: FileHandle) {
    this.partial = `${target}.partial`;
    this.previous = `${target}.partial.prev`;
    this.spoolDir = `${target}.partial.d`;
    this.archive = new ZipArchive({ zlib: { level: 6 } });
    // Per file, held to the end, these two grew with the zip's entries (bench/notes.md, "Zip output").
    this.central = SpilledCentralDirectory.install((this.archive as unknown as { _module: { engine: unknown } })._module.engine, join(this.spoolDir, 'central'));
    this.lines = new LineFile(join(this.spoolDir, 'lines.jsonl'));
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

  /** Where the files come from, the manifest's first line: this run's, else the earlier zip's. */
  private source: ExportSource | undefined;

  /** Opens the zip export `file` (written as `file.partial`); `source`, when given, is recorded as the manifest's first line. */
  static async create(file: string, source?: ExportSource): Promise<ZipSink> {
    // Made from the absolute path: what mkdir answers is then the zip's folder or a parent of it.
    const createdFrom = await mkdir(dirname(resolve(file)), { recursive: true });
    await rm(`${file}.partial.d`, { recursive: true, force: true });
    await mkdir(`${file}.partial.d`);
    let earlier = await EarlierZip.takeOver(`${file}.partial`, `${file}.partial.prev`);
    // With no `.partial`, a complete export zip there is read from as a rerun into a folder reads
    // its files: what it still holds is copied, checked, and only new or changed files downloaded.
    // It stays as it is until the new zip replaces it whole.
    let earlierIsTarget = false;
    if (!earlier) {
      earlier = await EarlierZip.open(file);
      earlierIsTarget = earlier !== null;
    }
    let handle: FileHandle;
    try {
      handle = await open(`${file}.partial`, 'w');
    } catch (error) {
      earlier?.close();
      if (earlier && !earlierIsTarget) await rename(earlier.path, `${file}.partial`).catch(() => undefined);
      throw error;
    }
    let sink: ZipSink;
    try {
      sink = new ZipSink(file, handle);
    } catch (error) {
      await handle.close();
      earlier?.close();
      throw error;
    }
    sink.createdFrom = createdFrom;
    sink.earlier = earlier;
    sink.earlierIsTarget = earlierIsTarget;
    sink.source = source;
    return sink;
  }

  /**
   * The entries of the earlier zip (a stopped run's `.partial`, or the complete zip) that its
   * manifest lists, by their sizes: kept on disk in the spool folder (IntactLines), by key.
   */
  async intactFromEarlierRun(): Promise<ReadonlyMap<string, ManifestLine>> {
    if (!this.earlier) return new Map();
    this.intact = await this.earlier.intact(join(this.spoolDir, 'earlier'));
    this.source ??= await this.earlier.source();
    return this.intact;
  }

  /**
   * Copies the entries of `lines` from the earlier zip, one at a time, each read whole and
   * checked (CRC-32, size, sha256) before it is appended; answers the lines not copied. Entries
   * over WHOLE_LIMIT are not carried over (the service keeps files to 5 MB): downloading them
   * again costs less than holding them in memory to check them first.
   */
  async keep(lines: Iterable<ManifestLine> | AsyncIterable<ManifestLine>, signal?: AbortSignal): Promise<ManifestLine[]> {
    const { lost, unreached } = await this.copyFrom(this.earlier, lines, signal);
    this.keptAll = unreached.length === 0;
    return [...lost, ...unreached];
  }

  /** Copies the entries of `lines` from `earlier`, each checked; answers those not copied, and those `signal` stopped it from reaching. */
  private async copyFrom(earlier: EarlierZip | null, lines: Iterable<ManifestLine> | AsyncIterable<ManifestLine>, signal?: AbortSignal): Promise<{ lost: ManifestLine[]; unreached: ManifestLine[] }> {
    const lost: ManifestLine[] = [];
    const unreached: ManifestLine[] = [];
    // Small entries are read several at once ahead of the one being appended: read one at a time,
    // each entry's header and bytes waited on in turn, a rerun into a zip of 50,000 took 35 s.
    const ahead = mapInOrder(lines, async (line): Promise<{ line: ManifestLine; data?: Buffer | null }> => {
      if (signal?.aborted || !earlier || line.size > READ_AHEAD_BYTES) return { line };
      return { line, data: await earlier.readWhole(line) };
    }, { concurrency: READ_AHEAD_READS, window: READ_AHEAD_ENTRIES });
    for await (const { line, data } of ahead) {
      if (signal?.aborted) {
        unreached.push(line);
        continue;
      }
      if (!earlier || line.size > WHOLE_LIMIT) {
        lost.push(line);
        continue;
      }
      let copied = false;
      if (data !== undefined) {
        if (data) {
          await this.append(shouldDeflate(line.path) ? Readable.from([data], { objectMode: false }) : data, line.path);
          copied = true;
        }
      } else if (shouldDeflate(line.path)) {
        const whole = await earlier.readWhole(line);
        if (whole) {
          await this.append(Readable.from([whole], { objectMode: false }), line.path);
          copied = true;
        }
      } else {
        await this.appendWhole(line.size, line.path, async (into) => (copied = (await earlier.readWhole(line, into)) !== null));
      }
      if (copied) this.lines.add(line);
      else lost.push(line);
    }
    return { lost, unreached };
  }

  /**
   * Copies what the earlier zip holds and this run's zip lacks (the old version of a changed file
   * whose download failed), since the new zip replaces it. A `.partial` taken over came from a run
   * that started from the complete zip at the target, which then holds the last copy of such files.
   */
  private async carryOver(): Promise<void> {
    if (!this.earlier) return;
    const atTarget = this.earlierIsTarget ? null : await EarlierZip.open(this.target);
    let targetLines: ManifestIndex | null = null;
    try {
      this.intact ??= await this.earlier.intact(join(this.spoolDir, 'earlier'));
      await this.copyFrom(this.earlier, await this.missing(this.intact));
      if (atTarget) {
        targetLines = await atTarget.intact(join(this.spoolDir, 'target'));
        // After the first: what was copied from it is in this zip now.
        await this.copyFrom(atTarget, await this.missing(targetLines));
      }
    } finally {
      targetLines?.close();
      atTarget?.close();
    }
  }

  /**
   * The lines of `earlier` (in manifest order) whose key and path no entry of this zip has: this
   * zip's lines are sorted through files and merged with them by key, and the paths of the few
   * left are looked for in a second pass, so that neither side is held (issue 46).
   */
  private async missing(earlier: ReadonlyMap<string, ManifestLine>): Promise<ManifestLine[]> {
    const sorted = join(this.spoolDir, 'carry-over.jsonl');
    this.lines.sync();
    await writeSortedManifest(this.lines.path, sorted);
    try {
      const keyMissing: ManifestLine[] = [];
      const mine = readLines(sorted)[Symbol.asyncIterator]();
      const next = async (): Promise<ManifestLine | undefined> => {
        const read = await mine.next();
        return read.done ? undefined : (JSON.parse(read.value.bytes.toString('utf8')) as ManifestLine);
      };
      let head = await next();
      for (const line of earlier.values()) {
        while (head && compareLines(head, line) < 0) head = await next();
        if (!head || compareLines(head, line) !== 0) keyMissing.push(line);
      }
      await mine.return?.(undefined);
      if (keyMissing.length === 0) return [];
      // A moved record's line keeps its path under another key: its file is in this zip.
      const taken = new Set<string>();
      const wanted = new Set(keyMissing.map((line) => line.path));
      for await (const { bytes } of readLines(sorted)) {
        const { path } = JSON.parse(bytes.toString('utf8')) as ManifestLine;
        if (wanted.has(path)) taken.add(path);
      }
      return keyMissing.filter((line) => !taken.has(line.path));
    } finally {
      await rm(sorted, { force: true });
    }
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
    this.queued += 1;
    const run = this.chain.then(async () => {
      if (this.failure) throw this.failure;
      await work();
      if (this.failure) throw this.failure;
    });
    this.chain = run.catch(() => undefined).finally(() => {
      this.queued -= 1;
      if (this.queued < ZIP_WAITING_ENTRIES) for (const listener of this.startListeners) listener();
    });
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
  /** `fill` may answer false: the entry is then not appended (its bytes were not what they should be). */
  private appendWhole(size: number, name: string, fill: (into: Buffer) => Promise<boolean | void>): Promise<void> {
    return this.step(async () => {
      const reuse = size >= WHOLE_REUSE;
      const buffer = reuse ? await this.wholeBuffer(size) : Buffer.allocUnsafe(size);
      const entry = buffer.subarray(0, size);
      let given = false;
      try {
        given = (await fill(entry)) !== false;
        if (given) await this.appendNow(entry, name);
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
    // A small file waits for a block, with its body unread, when all of them are taken: the zip is
    // then behind the downloads, and more bytes in memory or spool files would not speed it up.
    let block = expectedSize !== undefined && expectedSize > 0 && expectedSize <= MEMORY_LIMIT ? await this.waiting.take(expectedSize) : null;
    /** Bytes in `block`. */
    let filled = 0;
    const spool = expectedSize !== undefined && expectedSize > MEMORY_LIMIT;
    const giveBlockBack = (reusable: boolean): void => {
      if (block) this.waiting.giveBack(block, reusable);
      block = null;
    };
    this.counter += 1;
    const spoolPath = join(this.spoolDir, String(this.counter));
    /** The bytes when not in a block: a spool file's next batch, or a file of unknown size. */
    let chunks: Buffer[] = [];
    let batchBytes = 0;
    let handle: FileHandle | null = spool ? await open(spoolPath, 'w') : null;
    if (spool) this.pace.enter();
    let spooled = spool;
    const spoolGone = (): void => {
      if (!spooled) return;
      spooled = false;
      this.pace.leave();
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
        if (block) {
          if (filled + chunk.length <= block.length) {
            filled += chunk.length;
            chunk.copy(block, filled - chunk.length);
            return undefined;
          }
          // More than the size announced (a file that changed meanwhile): its bytes go on as chunks.
          chunks.push(Buffer.from(block.subarray(0, filled)));
          giveBlockBack(true);
        }
        chunks.push(chunk);
        if (!handle) return undefined;
        batchBytes += chunk.length;
        return batchBytes >= SPOOL_BATCH ? flush() : undefined;
      },
      restart: async () => {
        filled = 0;
        chunks = [];
        batchBytes = 0;
        if (!handle) return;
        // Truncating keeps the write position: reopen, or the next bytes land after a hole.
        await handle.close();
        handle = await open(spoolPath, 'w');
      },
      commit: async (): Promise<FileDigest> => {
        if (block) {
          const entry = block.subarray(0, filled);
          // Hashed here, which costs less than a trip to the hashing thread.
          const digest = digestOf([entry]);
          let written = false;
          try {
            if (shouldDeflate(path)) {
              // The entry has been read (and deflated) to its end when the append resolves.
              await this.append(Readable.from([entry], { objectMode: false }), path);
              written = true;
            } else {
              await this.append(entry, path);
              // Reused once the file's writer has written this very buffer (see appendWhole).
              written = await this.output.whenWritten(entry);
            }
            return digest;
          } finally {
            giveBlockBack(written);
          }
        }
        if (!handle) {
          const data = chunks;
          chunks = [];
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
        giveBlockBack(true);
        spoolGone();
        if (handle) await handle.close();
        handle = null;
        await rm(spoolPath, { force: true });
      },
    };
  }

  async record(line: ManifestLine): Promise<void> {
    this.lines.add(line);
  }

  /** Writes the manifest last and completes the zip under its `.partial` name. */
  private async complete(onLine?: (line: ManifestLine) => void): Promise<void> {
    // Sorted through files as a folder's manifest is, and read into the zip a block at a time.
    this.lines.close();
    const sorted = join(this.spoolDir, MANIFEST_NAME);
    await writeSortedManifest(this.lines.path, sorted, onLine, this.source ? sourceLineText(this.source) : undefined);
    await this.append(createReadStream(sorted), MANIFEST_NAME);
    const closed = once(this.output, 'close');
    await this.archive.finalize();
    await closed;
    if (this.failure) throw this.failure;
  }

  private closeEarlier(): void {
    this.intact?.close();
    this.intact = null;
    this.earlier?.close();
    this.earlier = null;
  }

  /** Removes what the earlier run left, once this run's zip holds what it kept of it. */
  private async dropEarlier(): Promise<void> {
    this.closeEarlier();
    await rm(this.previous, { force: true });
    await rm(this.spoolDir, { recursive: true, force: true });
  }

  async finish(onLine?: (line: ManifestLine) => void): Promise<void> {
    await this.carryOver();
    await this.complete(onLine);
    await rename(this.partial, this.target);
    await this.dropEarlier();
  }

  /**
   * Completes the zip as `.partial` for the next run. Stopped before it had copied all it kept of
   * an earlier `.partial`, the run drops its own zip and leaves the earlier one as it was.
   */
  async pause(onLine?: (line: ManifestLine) => void): Promise<void> {
    if (this.earlier && !this.keptAll) return this.abort();
    await this.complete(onLine);
    await this.dropEarlier();
  }

  async letGo(): Promise<void> {
    this.archive.abort();
    this.output.destroy();
    this.lines.drop();
    this.central.close();
    this.closeEarlier();
  }

  /** Drops this run's zip; an earlier run's `.partial` is put back as it was (a complete zip stays where it is). */
  async abort(): Promise<void> {
    this.archive.abort();
    this.output.destroy();
    this.lines.drop();
    this.central.close();
    await rm(this.partial, { force: true });
    await rm(this.spoolDir, { recursive: true, force: true });
    const earlier = this.earlier;
    this.closeEarlier();
    if (earlier && !this.earlierIsTarget) await rename(earlier.path, this.partial).catch(() => undefined);
    // A run that failed leaves no folder it made for the zip.
    else await removeEmptyDirs(dirname(resolve(this.target)), this.createdFrom);
  }
}

/**
 * Memory for files waiting for the zip: blocks of a power of two from SMALLEST_BLOCK up, made when
 * needed while they fit in `budget` bytes, and used again. A file waits in one block, copied out
 * of the socket's read buffers as it comes. Kept instead, those buffers outlived two young-
 * generation collections while the file waited its turn, went to the old generation and were freed
 * only by a full collection, which V8 runs after 64 MB of such memory.
 */
export class WaitingBlocks {
  private readonly free = new Map<number, Buffer[]>();
  /** Bytes of the blocks that exist, free or in use. */
  private bytes = 0;
  private readonly waiters: { blockSize: number; resolve: (block: Buffer) => void }[] = [];

  constructor(private readonly budget: number) {}

  /** A block for `size` bytes (at most the budget), as soon as there is one. */
  take(size: number): Promise<Buffer> {
    const blockSize = Math.max(SMALLEST_BLOCK, 2 ** Math.ceil(Math.log2(size)));
    if (blockSize > this.budget) throw new RangeError(`a block of ${blockSize} bytes is over the budget of ${this.budget}`);
    const block = this.waiters.length ? null : this.tryTake(blockSize);
    if (block) return Promise.resolve(block);
    return new Promise((resolve) => this.waiters.push({ blockSize, resolve }));
  }

  /**
   * A block is done with. `reusable` is false when something else may still hold it (the zip's
   * writer took a copy, or failed): it is let go, and its bytes leave the budget.
   */
  giveBack(block: Buffer, reusable: boolean): void {
    if (reusable) {
      let blocks = this.free.get(block.length);
      if (!blocks) this.free.set(block.length, (blocks = []));
      blocks.push(block);
    } else this.bytes -= block.length;
    // Served in order of asking.
    while (this.waiters.length) {
      const next = this.tryTake(this.waiters[0]!.blockSize);
      if (!next) break;
      this.waiters.shift()!.resolve(next);
    }
  }

  private tryTake(blockSize: number): Buffer | null {
    const ready = this.free.get(blockSize)?.pop();
    if (ready) return ready;
    // Room is made by letting free blocks of other sizes go.
    for (const [other, blocks] of this.free) {
      while (blocks.length && this.bytes + blockSize > this.budget) {
        blocks.pop();
        this.bytes -= other;
      }
    }
    if (this.bytes + blockSize > this.budget) return null;
    this.bytes += blockSize;
    return Buffer.allocUnsafeSlow(blockSize);
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
