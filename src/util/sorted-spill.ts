/**
 * Values sorted by a string key through temporary files, as sort(1) sorts what does not fit:
 * runs of RUN_VALUES sorted in memory and written out, then merged as they are read back. What
 * `verify` compares (a folder's files with its manifest's paths, a zip's entries with its
 * manifest's lines) is gathered here, so that its memory does not grow with the files (issue 46).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { readLines } from './line-reader.js';
import { makeTempDirSync } from './temp-dir.js';

/** Values sorted in memory at a time. */
const RUN_VALUES = 8192;
/** Bytes read at a time from each run as they are merged. */
const RUN_READ_BYTES = 64 * 1024;

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export class SortedSpill<T> {
  private held: [string, T][] = [];
  private readonly runs: string[] = [];
  private dir: string | null = null;

  /**
   * @param runValues Values sorted in memory at a time (fewer for large values).
   * @param readBytes Bytes read at a time from each run as they are merged (less where the runs are many).
   */
  constructor(private readonly runValues = RUN_VALUES, private readonly readBytes = RUN_READ_BYTES) {}

  /** Adds `value` under `key` (equal keys keep the order they were added in). */
  async add(key: string, value: T): Promise<void> {
    this.held.push([key, value]);
    if (this.held.length >= this.runValues) await this.writeRun();
  }

  /**
   * {@link add} for a caller that cannot wait (a callback of a listing read entry by entry): a
   * run is written synchronously when one is full.
   */
  addNow(key: string, value: T): void {
    this.held.push([key, value]);
    if (this.held.length < this.runValues) return;
    this.dir ??= makeTempDirSync('sort');
    const path = join(this.dir, `run-${this.runs.length}`);
    writeFileSync(path, this.sortedHeld().map((pair) => `${JSON.stringify(pair)}\n`).join(''));
    this.runs.push(path);
    this.held = [];
  }

  private async writeRun(): Promise<void> {
    this.dir ??= makeTempDirSync('sort');
    const path = join(this.dir, `run-${this.runs.length}`);
    const handle = await open(path, 'w');
    try {
      await handle.write(this.sortedHeld().map((pair) => `${JSON.stringify(pair)}\n`).join(''));
    } finally {
      await handle.close();
    }
    this.runs.push(path);
    this.held = [];
  }

  private sortedHeld(): [string, T][] {
    // Stable: equal keys stay in the order they were added.
    return this.held.sort((a, b) => byCodeUnits(a[0], b[0]));
  }

  /** Every value added, by key (code units), each with its key; may be read again until closed. */
  async* sorted(): AsyncGenerator<[string, T]> {
    const blockBytes = this.readBytes;
    const sources: AsyncIterator<[string, T]>[] = this.runs.map((path) => (async function* () {
      for await (const { bytes } of readLines(path, { blockBytes })) yield JSON.parse(bytes.toString('utf8')) as [string, T];
    })());
    // A copy: a value added while this is read must not shift the one being read.
    const last = this.sortedHeld().slice();
    sources.push((async function* () { yield* last; })());
    const heads = await Promise.all(sources.map(async (source) => (await source.next()).value as [string, T] | undefined));
    for (;;) {
      // The first key of the earliest run among equals: runs were written in the order added.
      let at = -1;
      for (let i = 0; i < heads.length; i += 1) if (heads[i] && (at < 0 || byCodeUnits(heads[i]![0], heads[at]![0]) < 0)) at = i;
      if (at < 0) return;
      yield heads[at]!;
      heads[at] = (await sources[at]!.next()).value as [string, T] | undefined;
    }
  }

  /** Removes the temporary files (safe to call twice). */
  close(): void {
    this.held = [];
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
  }
}
