/**
 * A report's items kept in a temporary file instead of memory: an export holds one item per file,
 * and kept to the end of a run they grew its memory with its files. The file is made in the OS's
 * temporary folder and its name removed at once, so that nothing is left behind however the
 * process ends; the open handle is all that reaches it, closed by `close()` (or, failing that,
 * when the report is collected).
 */
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDirSync } from '../util/temp-dir.js';

/** Bytes read at a time when the items are read back. */
const READ_BYTES = 64 * 1024;

/** Folders whose file could not be removed while open (a system that forbids it): removed at exit. */
const leftAtExit = new Set<string>();
let exitHook = false;

function removeAtExit(dir: string): void {
  leftAtExit.add(dir);
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => leftAtExit.forEach((left) => rmSync(left, { recursive: true, force: true })));
}

const collected = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // Closed already.
  }
});

/** Items of type T (a report's ItemReport), one JSON line each. */
export class ItemSpill<T> {
  /** Bytes of whole lines written: the next part goes there, over what a failed write left. */
  private size = 0;
  private closed = false;

  private constructor(private readonly fd: number) {}

  /**
   * A new, empty spill, whose handle is closed by `close()` or else once `owner` is collected;
   * throws when the temporary folder cannot be written.
   */
  static create<T>(owner: object): ItemSpill<T> {
    const dir = makeTempDirSync('report');
    let fd: number;
    try {
      fd = openSync(join(dir, 'items.jsonl'), 'w+', 0o600);
    } catch (error) {
      // The folder made for the file would otherwise stay behind, empty.
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    try {
      rmSync(dir, { recursive: true });
    } catch {
      removeAtExit(dir);
    }
    const spill = new ItemSpill<T>(fd);
    collected.register(owner, fd, spill);
    return spill;
  }

  /** Closes the file, which frees its disk space; reading or appending after it throws. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    collected.unregister(this);
    closeSync(this.fd);
  }

  /** Appends `items`, all or none: after a failed write (the disk full) they are not part of the file, and it throws. */
  append(items: readonly T[]): void {
    this.checkOpen();
    const data = Buffer.from(items.map((item) => `${JSON.stringify(item)}\n`).join(''));
    for (let at = 0; at < data.length; ) {
      const bytes = writeSync(this.fd, data, at, data.length - at, this.size + at);
      if (bytes === 0) throw new Error(`only ${at} of ${data.length} bytes of report items were written`);
      at += bytes;
    }
    this.size += data.length;
  }

  /** The items appended, in order, read a part at a time. */
  *read(): Generator<T> {
    this.checkOpen();
    let carry = Buffer.alloc(0);
    for (let at = 0; at < this.size; ) {
      const buffer = Buffer.alloc(Math.min(READ_BYTES, this.size - at));
      const bytes = readSync(this.fd, buffer, 0, buffer.length, at);
      if (bytes === 0) break;
      at += bytes;
      // A character's bytes may be cut between reads: text is decoded up to the last newline.
      const data = Buffer.concat([carry, buffer.subarray(0, bytes)]);
      const end = data.lastIndexOf(0x0a);
      carry = end < 0 ? data : data.subarray(end + 1);
      if (end < 0) continue;
      for (const line of data.toString('utf8', 0, end).split('\n')) if (line) yield JSON.parse(line) as T;
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new Error('the report was closed: its items kept on disk are gone');
  }
}

/** Items gathered in memory before they are appended to the spill. */
const ITEMS_PER_PART = 256;

/**
 * A list of items held in memory, or, once `keepOnDisk` was called, appended to an
 * {@link ItemSpill} a part at a time. Should the temporary folder refuse them, they stay in memory.
 */
export class ItemList<T> {
  /** Items not in the spill: all of them, unless `keepOnDisk` was called. */
  private held: T[] = [];
  private spill: ItemSpill<T> | null = null;
  private onDisk = false;

  /** Keeps the items in a temporary file from here on, a part at a time, instead of memory. */
  keepOnDisk(): this {
    this.onDisk = true;
    return this;
  }

  push(item: T): void {
    this.held.push(item);
    if (this.onDisk && this.held.length >= ITEMS_PER_PART) this.spillHeld();
  }

  private spillHeld(): void {
    try {
      this.spill ??= ItemSpill.create<T>(this);
      this.spill.append(this.held);
      this.held = [];
    } catch {
      // The temporary folder is full or unwritable: the items stay in memory, the list whole.
      this.onDisk = false;
    }
  }

  /** The items as one array when none went to disk (nothing to read back), else null. */
  get inMemory(): T[] | null {
    return this.spill ? null : this.held;
  }

  /** The items in the order pushed, those on disk read a part at a time. */
  *read(): Generator<T> {
    if (this.spill) yield* this.spill.read();
    yield* this.held;
  }

  /** Lets go of the items: the temporary file is closed and its space freed. */
  close(): void {
    this.spill?.close();
    this.spill = null;
    this.onDisk = false;
    this.held = [];
  }
}
