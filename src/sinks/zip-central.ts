/**
 * The zip's central directory kept in a file as the entries are appended. archiver's zip engine
 * (zip-stream) holds an entry object for every file to the end and then writes the whole central
 * directory in one synchronous loop of tiny chunks, which pile up in its streams' buffers: both
 * grow with the number of files (bench/notes.md, "Zip output"). Here each entry's central record
 * is made as the entry is appended, by the engine's own `_writeCentralFileHeader` (so its bytes
 * are the engine's), written to `path`, and copied into the zip at the end a block at a time,
 * waiting for the engine to take each. The engine's zip64 records and end of central directory
 * are written as before, from the count of entries kept here.
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';

/** The parts of zip-stream's engine (compress-commons' ZipArchiveOutputStream) this replaces or calls. */
interface ZipEngine {
  _entries: unknown;
  _archive: { centralOffset: number; centralLength: number; processing: boolean; finish: boolean; finished: boolean };
  offset: number;
  destroyed?: boolean;
  write(chunk: Buffer): boolean;
  end(): void;
  emit(event: 'error', error: Error): boolean;
  once(event: string, listener: () => void): unknown;
  removeListener(event: string, listener: () => void): unknown;
  isZip64(): boolean;
  _finish(): void;
  _writeCentralFileHeader(entry: unknown): void;
  _writeCentralDirectoryZip64(): void;
  _writeCentralDirectoryEnd(): void;
}

/** Central records gathered before they are written to the file, and read back at a time (a record is at most 46 + 65,535 + 65,535 + 65,535 bytes, and ours far less). */
const BLOCK_BYTES = 256 * 1024;

const METHODS = ['isZip64', '_finish', '_writeCentralFileHeader', '_writeCentralDirectoryZip64', '_writeCentralDirectoryEnd', 'write', 'end'] as const;

export class SpilledCentralDirectory {
  /** Entries appended: the engine reads it as `_entries.length` for its end records. */
  length = 0;
  private readonly fd: number;
  /** Central records gathered before they are written, copied in: a Buffer object each would cost more than its bytes. */
  private readonly block = Buffer.allocUnsafe(BLOCK_BYTES);
  private blockBytes = 0;
  /** Bytes in the file. */
  private size = 0;
  private failure: Error | null = null;
  private closed = false;

  /**
   * Takes over the central directory of archiver's zip engine `engine` (archiver's
   * `ZipArchive._module.engine`), keeping it in a new file at `path`.
   */
  static install(engine: unknown, path: string): SpilledCentralDirectory {
    const e = engine as Partial<ZipEngine> | null;
    const missing = METHODS.filter((name) => typeof e?.[name] !== 'function');
    if (!e || missing.length > 0 || !Array.isArray(e._entries) || typeof e._archive !== 'object') {
      throw new Error(`archiver's zip engine is not the one the zip export was written for (no ${missing.join(', ') || '_entries'}): check the archiver version in package.json`);
    }
    const directory = new SpilledCentralDirectory(e as ZipEngine, path);
    // The engine pushes each appended entry here and reads `length`; its `_finish` is ours.
    e._entries = directory;
    e._finish = () => {
      directory.writeOut().catch((error: Error) => {
        directory.close();
        e.emit!('error', error);
      });
    };
    return directory;
  }

  private constructor(private readonly engine: ZipEngine, path: string) {
    this.fd = openSync(path, 'w+', 0o600);
  }

  /** Called by the engine once an entry is complete (sizes, CRC and offset known): its central record goes to the file. */
  push(entry: unknown): number {
    this.length += 1;
    if (this.failure || this.closed) return this.length;
    const parts: Buffer[] = [];
    // The engine's own record writer, given a sink that collects instead of the stream.
    this.engine._writeCentralFileHeader.call({ write: (chunk: Buffer | string) => parts.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk) }, entry);
    try {
      for (const part of parts) {
        if (this.blockBytes + part.length > this.block.length) this.flush();
        this.blockBytes += part.copy(this.block, this.blockBytes);
      }
    } catch (error) {
      // Thrown here it would leave archiver mid-entry: the zip fails through the engine instead.
      this.failure = error as Error;
      process.nextTick(() => this.engine.emit('error', this.failure!));
    }
    return this.length;
  }

  private flush(): void {
    if (this.blockBytes === 0) return;
    const data = this.block.subarray(0, this.blockBytes);
    this.blockBytes = 0;
    for (let at = 0; at < data.length; ) {
      const bytes = writeSync(this.fd, data, at, data.length - at, this.size + at);
      if (bytes === 0) throw new Error(`only ${at} of ${data.length} bytes of the zip's central directory were written`);
      at += bytes;
    }
    this.size += data.length;
  }

  /** What the engine's `_finish` did, with the central records read back from the file a block at a time. */
  private async writeOut(): Promise<void> {
    const { engine } = this;
    if (this.failure) throw this.failure;
    this.flush();
    engine._archive.centralOffset = engine.offset;
    for (let at = 0; at < this.size; ) {
      if (this.closed) throw new Error('the zip was closed while its central directory was written');
      // A block of its own each time: the stream holds on to what it was given until it is written.
      const block = Buffer.allocUnsafe(Math.min(BLOCK_BYTES, this.size - at));
      const bytes = readSync(this.fd, block, 0, block.length, at);
      if (bytes === 0) throw new Error(`the zip's central directory file ended at ${at} of ${this.size} bytes`);
      at += bytes;
      if (!engine.write(bytes === block.length ? block : block.subarray(0, bytes))) await this.drained();
    }
    this.close();
    engine._archive.centralLength = engine.offset - engine._archive.centralOffset;
    if (engine.isZip64()) engine._writeCentralDirectoryZip64();
    engine._writeCentralDirectoryEnd();
    engine._archive.processing = false;
    engine._archive.finish = true;
    engine._archive.finished = true;
    engine.end();
  }

  /** Resolves when the engine takes more, or is closed (aborted). */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.engine.removeListener('drain', done);
        this.engine.removeListener('close', done);
        resolve();
      };
      this.engine.once('drain', done);
      this.engine.once('close', done);
    });
  }

  /** Closes the file (its folder is the zip's spool folder, removed with it). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.blockBytes = 0;
    closeSync(this.fd);
  }
}
