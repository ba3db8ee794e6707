/**
 * The lines of earlier snapshots' manifests by key, kept on disk: what is held in memory for each
 * file is where its line starts (8 bytes) and a hash of its key, in typed arrays (about 30 bytes a
 * file in all), not the parsed line, so that an archive run of 200,000 files does not hold 200,000 lines. A line is
 * read again (one pread) when it is asked for. The manifests are a finished snapshot's, which no
 * run writes to again (DESIGN.md section 10).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { MANIFEST_NAME, checkManifestLine, manifestKey, type ManifestLine } from './manifest.js';
import { readLines } from '../util/line-reader.js';
import { doubledSlots, fnv1a, grown } from './hash-slots.js';

/** A 30-bit hash of a string (FNV-1a), small enough to be a small integer key in V8. */
const hash30 = (text: string, seed?: number): number => fnv1a(text, seed) >>> 2;

/** Two hashes of a path in one number (52 bits). */
const pathHash = (path: string): number => hash30(path) * 2 ** 22 + (hash30(path, 0x01234567) >>> 8);

/** Lines handed to `onTurn` at a time as the manifests are read. */
const LINES_PER_TURN = 1000;
/** Bytes read at first for one line; a longer line is read again whole. */
const LINE_READ = 1024;

export class ManifestIndex implements ReadonlyMap<string, ManifestLine> {
  /** The snapshot folders read, oldest first. */
  private readonly dirs: string[] = [];
  private readonly fds: (number | null)[] = [];
  /** Each entry's line: its manifest (index of `dirs`), where it starts, and whether a later line replaced it. */
  private starts = new Float64Array(1024);
  private dirOfEntry = new Uint16Array(1024);
  private replaced = new Uint8Array(1024);
  /** Two hashes of each entry's path, for `pathsUnique`. */
  private pathHashes = new Float64Array(1024);
  /** The hash of each entry's key. */
  private keyHashes = new Uint32Array(1024);
  private count = 0;
  /**
   * The latest entry of each key, plus one (0: an empty slot), at the slot of its key's hash or the
   * next free one after it: typed arrays, not a Map, whose 200,000 entries took 7 to 11 MB of the
   * heap (with its copy as it grew) against 2 MB here.
   */
  private slots = new Int32Array(2048);
  private live = 0;
  /** Where `lineAt` reads a line. */
  private scratch = Buffer.allocUnsafeSlow(LINE_READ);
  /** The line `slotOf` last read to tell its entry's key, which `get` then answers without reading it again. */
  private checkedEntry = -1;
  private checkedLine: ManifestLine | null = null;

  get size(): number {
    return this.live;
  }

  /**
   * Reads the manifest of each of `dirs` (oldest first): a newer snapshot's line of a file
   * replaces an older one's. A manifest that cannot be read is passed over (its files are
   * downloaded) from where it fails, as are its lines that are not good file lines. `onTurn` gets the good lines of
   * each manifest as they are read, with its folder.
   */
  static async read(dirs: string[], onTurn?: (lines: ManifestLine[], dir: string) => void): Promise<ManifestIndex> {
    const index = new ManifestIndex();
    for (const dir of dirs) await index.add(dir, onTurn).catch(() => undefined);
    return index;
  }

  private async add(dir: string, onTurn?: (lines: ManifestLine[], dir: string) => void): Promise<void> {
    const at = this.dirs.length;
    this.dirs.push(dir);
    this.fds.push(null);
    let turn: ManifestLine[] = [];
    const into = { problems: [] as string[] };
    for await (const { bytes, number, offset } of readLines(join(dir, MANIFEST_NAME), { tail: true })) {
      const line = checkManifestLine(bytes.toString('utf8'), number, into);
      into.problems.length = 0;
      if (!line) continue;
      this.put(manifestKey(line), at, offset, pathHash(line.path));
      if (!onTurn) continue;
      turn.push(line);
      if (turn.length >= LINES_PER_TURN) {
        onTurn(turn, dir);
        turn = [];
      }
    }
    if (turn.length > 0) onTurn?.(turn, dir);
  }

  private put(key: string, dir: number, start: number, path: number): void {
    const hash = hash30(key);
    const at = this.slotOf(key, hash);
    const there = this.slots[at]! - 1;
    const entry = this.newEntry(dir, start, path, hash);
    if (there >= 0) this.replace(there);
    this.live += 1;
    this.slots[at] = entry + 1;
    if (2 * this.live > this.slots.length) this.growSlots();
  }

  /** The slot of `key` (of hash `hash`): its entry's, or the empty one where it would go. */
  private slotOf(key: string, hash: number): number {
    const mask = this.slots.length - 1;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = this.slots[at]! - 1;
      if (entry < 0) return at;
      if (this.keyHashes[entry] !== hash) continue;
      const line = this.lineAt(entry);
      if (manifestKey(line) !== key) continue;
      this.checkedEntry = entry;
      this.checkedLine = line;
      return at;
    }
  }

  private growSlots(): void {
    this.slots = doubledSlots(this.slots, (entry) => this.keyHashes[entry]!);
  }

  private replace(entry: number): void {
    this.replaced[entry] = 1;
    this.live -= 1;
  }

  private newEntry(dir: number, start: number, path: number, key: number): number {
    if (this.count === this.starts.length) {
      const n = this.count * 2;
      this.starts = grown(this.starts, n);
      this.dirOfEntry = grown(this.dirOfEntry, n);
      this.replaced = grown(this.replaced, n);
      this.pathHashes = grown(this.pathHashes, n);
      this.keyHashes = grown(this.keyHashes, n);
    }
    this.keyHashes[this.count] = key;
    this.pathHashes[this.count] = path;
    this.starts[this.count] = start;
    this.dirOfEntry[this.count] = dir;
    return this.count++;
  }

  /** The entry of `key`, if the index holds it. */
  private entryOf(key: string): number | undefined {
    const entry = this.slots[this.slotOf(key, hash30(key))]! - 1;
    return entry < 0 ? undefined : entry;
  }

  private fdOf(dir: number): number {
    return (this.fds[dir] ??= openSync(join(this.dirs[dir]!, MANIFEST_NAME), 'r'));
  }

  /** The line of `entry`, read from its manifest. */
  private lineAt(entry: number): ManifestLine {
    const fd = this.fdOf(this.dirOfEntry[entry]!);
    const start = this.starts[entry]!;
    for (let length = LINE_READ; ; length *= 4) {
      // One buffer for every lookup: a run looks up each of 200,000 lines, and a new kilobyte each
      // time was memory outside the heap that only a collection gave back.
      if (this.scratch.length < length) this.scratch = Buffer.allocUnsafeSlow(length);
      const buffer = this.scratch;
      const read = readSync(fd, buffer, 0, length, start);
      const end = buffer.subarray(0, read).indexOf(0x0a);
      if (end < 0 && read === length) continue;
      const line = checkManifestLine(buffer.toString('utf8', 0, end < 0 ? read : end), 0, { problems: [] });
      if (!line) throw new Error(`${join(this.dirs[this.dirOfEntry[entry]!]!, MANIFEST_NAME)} changed while the run read it`);
      return line;
    }
  }

  get(key: string): ManifestLine | undefined {
    const entry = this.entryOf(key);
    if (entry === undefined) return undefined;
    // Handed out once: each `get` answers a line of its own, as a read would.
    const checked = entry === this.checkedEntry ? this.checkedLine : null;
    this.checkedEntry = -1;
    this.checkedLine = null;
    return checked ?? this.lineAt(entry);
  }

  has(key: string): boolean {
    return this.entryOf(key) !== undefined;
  }

  /** The snapshot folder that holds the line of `key`, if the index holds it. */
  dirOf(key: string): string | undefined {
    const entry = this.entryOf(key);
    return entry === undefined ? undefined : this.dirs[this.dirOfEntry[entry]!];
  }

  /**
   * The path of every good line of the manifests read, replaced ones too, a block at a time: what a
   * run made folders for ahead of the listing. A manifest no longer readable gives what it can.
   */
  async *paths(): AsyncGenerator<string> {
    const into = { problems: [] as string[] };
    for (const dir of this.dirs) {
      try {
        for await (const { bytes, number } of readLines(join(dir, MANIFEST_NAME), { tail: true })) {
          const line = checkManifestLine(bytes.toString('utf8'), number, into);
          into.problems.length = 0;
          if (line) yield line.path;
        }
      } catch {
        // Read as far as it could be.
      }
    }
  }

  /** The folder of the newest manifest read, or '' when none was. */
  get newestDir(): string {
    return this.dirs.at(-1) ?? '';
  }

  /** Whether more than one manifest was read. */
  get layered(): boolean {
    return this.dirs.length > 1;
  }

  /**
   * Whether no two lines have one path, by two hashes of each path: a false "no" (two paths with
   * the same hashes) only keeps a run from starting downloads early.
   */
  pathsUnique(): boolean {
    const hashes = new Float64Array(this.live);
    let n = 0;
    for (let entry = 0; entry < this.count; entry += 1) if (!this.replaced[entry]) hashes[n++] = this.pathHashes[entry]!;
    hashes.sort();
    for (let i = 1; i < n; i += 1) if (hashes[i] === hashes[i - 1]) return false;
    return true;
  }

  *entries(): MapIterator<[string, ManifestLine]> {
    for (const line of this.values()) yield [manifestKey(line), line];
  }

  *keys(): MapIterator<string> {
    for (const line of this.values()) yield manifestKey(line);
  }

  /** The lines in the order they were read, each manifest read a block at a time. */
  *values(): MapIterator<ManifestLine> {
    let block = Buffer.alloc(0);
    let blockDir = -1;
    let blockStart = 0;
    for (let entry = 0; entry < this.count; entry += 1) {
      if (this.replaced[entry]) continue;
      const dir = this.dirOfEntry[entry]!;
      const start = this.starts[entry]!;
      let end = dir === blockDir && start >= blockStart ? block.indexOf(0x0a, start - blockStart) : -1;
      if (end < 0) {
        block = Buffer.allocUnsafe(1 << 20);
        block = block.subarray(0, readSync(this.fdOf(dir), block, 0, block.length, start));
        blockDir = dir;
        blockStart = start;
        end = block.indexOf(0x0a);
      }
      if (end < 0) {
        yield this.lineAt(entry);
        continue;
      }
      const line = checkManifestLine(block.toString('utf8', start - blockStart, end), 0, { problems: [] });
      if (!line) throw new Error(`${join(this.dirs[dir]!, MANIFEST_NAME)} changed while the run read it`);
      yield line;
    }
  }

  [Symbol.iterator](): MapIterator<[string, ManifestLine]> {
    return this.entries();
  }

  forEach(callback: (value: ManifestLine, key: string, map: ReadonlyMap<string, ManifestLine>) => void, thisArg?: unknown): void {
    for (const [key, line] of this.entries()) callback.call(thisArg, line, key, this);
  }

  /** Closes the manifests; a later read opens them again. */
  close(): void {
    for (let i = 0; i < this.fds.length; i += 1) {
      const fd = this.fds[i];
      if (fd === null || fd === undefined) continue;
      this.fds[i] = null;
      try {
        closeSync(fd);
      } catch {
        // Closed already.
      }
    }
  }
}
