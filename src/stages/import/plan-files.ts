/**
 * What the imports' plans on disk share (issue 46: memory that does not grow with the files): the
 * spills that sort their records through temporary files, the typed arrays that keep a few numbers
 * a file, and a lane's files written out in source order and read back batch by batch, as the
 * numbers planned them (attachment-plan.ts, photo-plan.ts).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { readLines } from '../../util/line-reader.js';
import { SortedSpill } from '../../util/sorted-spill.js';

/**
 * A plan's spill: a file's record is some 300 bytes in memory, so a run of 2,048 of them is well
 * under a megabyte, and each run read back 16 KB at a time (200,000 files make 100 runs).
 */
export const planSpill = <T>(): SortedSpill<T> => new SortedSpill<T>(2048, 16 * 1024);

/** A number as a key that sorts as the number does (up to 10^12). */
export const pad = (n: number): string => String(n).padStart(12, '0');

/** A typed array that grows as numbers are pushed. */
export class Grow<A extends Float64Array | Int32Array | Uint8Array> {
  #array: A;
  #length = 0;

  constructor(private readonly make: new (length: number) => A) {
    this.#array = new make(1024);
  }

  push(n: number): void {
    if (this.#length === this.#array.length) {
      const bigger = new this.make(this.#array.length * 2);
      bigger.set(this.#array);
      this.#array = bigger;
    }
    this.#array[this.#length++] = n;
  }

  view(): A {
    return this.#array.subarray(0, this.#length) as A;
  }
}

/** Records written to a file as JSON lines, 1,024 at a time. */
export class LineWriter<R> {
  readonly #fd: number;
  #lines: string[] = [];

  constructor(readonly path: string) {
    this.#fd = openSync(path, 'w');
  }

  push(record: R): void {
    this.#lines.push(JSON.stringify(record));
    if (this.#lines.length >= 1024) this.#flush();
  }

  #flush(): void {
    if (this.#lines.length) writeSync(this.#fd, `${this.#lines.join('\n')}\n`);
    this.#lines = [];
  }

  close(): void {
    try {
      this.#flush();
    } finally {
      closeSync(this.#fd);
    }
  }
}

/** The records a {@link LineWriter} wrote, in order. */
export async function* linesOf<R>(path: string): AsyncGenerator<R> {
  for await (const { bytes: line } of readLines(path, { blockBytes: 64 * 1024 })) yield JSON.parse(line.toString('utf8')) as R;
}

/** Writes a lane's records (a spill read in source order) to `path` as JSON lines, each handed to `each` as it goes. */
export async function writeLane<R>(path: string, records: AsyncIterable<[string, R]>, each: (record: R) => void): Promise<void> {
  const out = new LineWriter<R>(path);
  try {
    for await (const [, record] of records) {
      each(record);
      out.push(record);
    }
  } finally {
    out.close();
  }
}

/**
 * The records {@link writeLane} wrote, batch by batch as `bins` says (each record's batch; each
 * batch keeps source order), or in source order when `bins` is null.
 */
export async function* laneInBins<R>(path: string, bins: Int32Array | null): AsyncGenerator<R> {
  if (!bins) {
    yield* linesOf<R>(path);
    return;
  }
  const dealt = planSpill<R>();
  try {
    let i = 0;
    for await (const record of linesOf<R>(path)) {
      await dealt.add(`${pad(bins[i]!)}\u0000${pad(i)}`, record);
      i += 1;
    }
    for await (const [, record] of dealt.sorted()) yield record;
  } finally {
    dealt.close();
  }
}
