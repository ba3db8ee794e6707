/**
 * What the journal knows applied at each target, kept as lines in a temporary file with an
 * open-addressed table of where each target's line is (typed arrays, about 25 bytes a target),
 * not as a Map of objects: a company's journal knows every file ever imported into it, and a
 * rerun of 50,000 attachments held 15 MB of them in the heap (issue 46). A line is read again
 * (one pread) when it is asked for. The file is unlinked as soon as it is made, so nothing is
 * left on disk whatever ends the process; a journal with few targets never makes one.
 */
import { closeSync, ftruncateSync, openSync, readSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { doubledSlots, fnv1a, grown } from '../../../sinks/hash-slots.js';
import { makeTempDirSync } from '../../../util/temp-dir.js';

/** What the journal knows of a file applied by some run. */
export interface AppliedFile {
  sha256: string;
  at: string;
  /** `updated_at` the listing showed once it was applied, when a run saw it. */
  updated_at?: string;
}

/** A line of the file: the target and what was applied there. */
type Row = [target: string, sha256: string, at: string, updatedAt?: string];

/** Lines kept in memory before they are written to the file. */
const PENDING_BYTES = 256 * 1024;
/** Bytes read at a time when every line is read in order. */
const BLOCK_BYTES = 64 * 1024;

/** A table dropped without `close` (a journal let go by an SDK user) still gives back its file handle. */
const handles = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // Closed already.
  }
});

export class AppliedTable {
  #fd: number | null = null;
  /** Bytes written to the file. */
  #written = 0;
  /** Lines of the entries from #firstPending on, not written yet. */
  #pending: string[] = [];
  #pendingBytes = 0;
  #firstPending = 0;
  /** Each entry's line: where it starts (in the file, or after what is written) and its bytes. */
  #starts = new Float64Array(1024);
  #lengths = new Uint32Array(1024);
  #hashes = new Uint32Array(1024);
  /** 1 where a later entry of the same target took its place. */
  #replaced = new Uint8Array(1024);
  #count = 0;
  /** Each target's latest entry plus one (0: an empty slot), at the slot of its hash or the next free one. */
  #slots = new Int32Array(2048);
  #live = 0;
  #scratch = Buffer.allocUnsafeSlow(1024);

  /** Targets known. */
  get size(): number {
    return this.#live;
  }

  get(target: string): AppliedFile | undefined {
    const slot = this.#slotOf(target, fnv1a(target));
    return this.#slots[slot] === 0 ? undefined : appliedOf(this.#row(this.#slots[slot]! - 1));
  }

  set(target: string, applied: AppliedFile): void {
    const hash = fnv1a(target);
    const slot = this.#slotOf(target, hash);
    const row: Row = applied.updated_at === undefined ? [target, applied.sha256, applied.at] : [target, applied.sha256, applied.at, applied.updated_at];
    const entry = this.#add(`${JSON.stringify(row)}\n`, hash);
    if (this.#slots[slot] !== 0) this.#replaced[this.#slots[slot]! - 1] = 1;
    else this.#live += 1;
    this.#slots[slot] = entry + 1;
    if (this.#live * 2 > this.#slots.length) this.#slots = doubledSlots(this.#slots, (e) => this.#hashes[e]!);
  }

  /** Every target known and what was applied there, in the order each target's latest line was added. */
  *entries(): Generator<[string, AppliedFile]> {
    let block = Buffer.alloc(0);
    let blockStart = 0;
    for (let e = 0; e < this.#count; e += 1) {
      if (this.#replaced[e]) continue;
      if (e >= this.#firstPending) {
        const row = JSON.parse(this.#pending[e - this.#firstPending]!) as Row;
        yield [row[0], appliedOf(row)];
        continue;
      }
      const start = this.#starts[e]!;
      const length = this.#lengths[e]!;
      if (start < blockStart || start + length > blockStart + block.length) {
        block = Buffer.allocUnsafe(Math.max(BLOCK_BYTES, length));
        block = block.subarray(0, readSync(this.#fd!, block, 0, block.length, start));
        blockStart = start;
      }
      const row = JSON.parse(block.toString('utf8', start - blockStart, start - blockStart + length)) as Row;
      yield [row[0], appliedOf(row)];
    }
  }

  /** Forgets every target (the file, if any, is kept for what comes next). */
  clear(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#firstPending = 0;
    this.#count = 0;
    this.#live = 0;
    this.#written = 0;
    this.#slots = new Int32Array(2048);
    if (this.#fd !== null) ftruncateSync(this.#fd, 0);
  }

  /** Gives back the file (safe to call twice). */
  close(): void {
    if (this.#fd === null) return;
    handles.unregister(this);
    closeSync(this.#fd);
    this.#fd = null;
  }

  /** The slot of `target`'s entry, or the empty slot where it would go. */
  #slotOf(target: string, hash: number): number {
    const mask = this.#slots.length - 1;
    let at = hash & mask;
    for (; this.#slots[at] !== 0; at = (at + 1) & mask) {
      const entry = this.#slots[at]! - 1;
      if (this.#hashes[entry] === hash && this.#row(entry)[0] === target) return at;
    }
    return at;
  }

  #add(line: string, hash: number): number {
    if (this.#count === this.#starts.length) {
      const length = this.#count * 2;
      this.#starts = grown(this.#starts, length);
      this.#lengths = grown(this.#lengths, length);
      this.#hashes = grown(this.#hashes, length);
      this.#replaced = grown(this.#replaced, length);
    }
    const bytes = Buffer.byteLength(line);
    const entry = this.#count++;
    this.#starts[entry] = this.#written + this.#pendingBytes;
    this.#lengths[entry] = bytes;
    this.#hashes[entry] = hash;
    this.#replaced[entry] = 0;
    this.#pending.push(line);
    this.#pendingBytes += bytes;
    if (this.#pendingBytes >= PENDING_BYTES) this.#flush();
    return entry;
  }

  #flush(): void {
    if (this.#fd === null) {
      this.#fd = openUnlinked();
      handles.register(this, this.#fd, this);
    }
    writeSync(this.#fd, this.#pending.join(''), this.#written);
    this.#written += this.#pendingBytes;
    this.#firstPending = this.#count;
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  #row(entry: number): Row {
    if (entry >= this.#firstPending) return JSON.parse(this.#pending[entry - this.#firstPending]!) as Row;
    const length = this.#lengths[entry]!;
    if (this.#scratch.length < length) this.#scratch = Buffer.allocUnsafeSlow(length);
    const read = readSync(this.#fd!, this.#scratch, 0, length, this.#starts[entry]!);
    return JSON.parse(this.#scratch.toString('utf8', 0, read)) as Row;
  }
}

function appliedOf(row: Row): AppliedFile {
  return row[3] === undefined ? { sha256: row[1], at: row[2] } : { sha256: row[1], at: row[2], updated_at: row[3] };
}

/** A temporary file, open and already unlinked: it goes when its handle is closed or the process ends. */
function openUnlinked(): number {
  const dir = makeTempDirSync('journal');
  try {
    const path = join(dir, 'applied');
    const fd = openSync(path, 'w+', 0o600);
    unlinkSync(path);
    return fd;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
