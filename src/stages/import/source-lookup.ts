/**
 * An import's files found again in the order they are checked, which is not the source's order
 * (lanes, planned batches), without holding a file object for every file of the source (issue 46:
 * a folder's file object is some 250 bytes, a zip's more). The plan keeps where each file is;
 * the source is read again, WINDOW planned files at a time, and each of them taken as its entry comes by. When
 * the check order follows the source's (one lane, greedy batches), one reading finds them all; a
 * window whose files lie behind the reading starts it again. A file no longer in the source is
 * answered as gone, as a file deleted between the listing and its check is.
 *
 * Reading names is cheap beside the requests (a folder's entries, a zip's central directory), and
 * an import waits on the service's 5 update requests a minute in any case.
 */
import type { ImportSource, SourceFile, SourceWant } from '../../sources/source.js';
import { turn } from './read.js';

/** What the plan kept of a file to find it again: where it is. */
export interface SourcePlace {
  /** Where it is (SourceFile.where): one source names each file once. */
  where: string;
}

/** Planned files looked up at a time. */
const WINDOW = 2048;
/** Entries read between two turns of the event loop. */
const BETWEEN_TURNS = 1000;

export class SourceLookup {
  #reading: AsyncIterator<unknown> | null = null;
  /** The entry the reading yields next. */
  #at = 0;

  constructor(private readonly source: ImportSource, private readonly want: Omit<SourceWant, 'note'>, private readonly window = WINDOW) {}

  /** Each planned item with its file, in the order given; null for one the source no longer holds. */
  async* files<T extends SourcePlace>(planned: AsyncIterable<T>, signal?: AbortSignal): AsyncGenerator<{ item: T; file: SourceFile | null }> {
    let batch: T[] = [];
    try {
      for await (const item of planned) {
        batch.push(item);
        if (batch.length < this.window) continue;
        yield* this.#find(batch, signal);
        batch = [];
      }
      if (batch.length) yield* this.#find(batch, signal);
    } finally {
      await this.#stop();
    }
  }

  async* #find<T extends SourcePlace>(items: T[], signal?: AbortSignal): AsyncGenerator<{ item: T; file: SourceFile | null }> {
    const found: (SourceFile | null)[] = items.map(() => null);
    // A CSV may name one file on several lines: each of them takes it.
    const wanted = new Map<string, number[]>();
    items.forEach((item, i) => {
      const same = wanted.get(item.where);
      if (same) same.push(i);
      else wanted.set(item.where, [i]);
    });
    // One whole round of the source at most, from where the reading is: what is not found then is gone.
    let read = 0;
    while (wanted.size > 0 && !signal?.aborted && (this.#entries === undefined || read < this.#entries)) {
      this.#reading ??= this.source.entries({ ...this.want, note: () => undefined })[Symbol.asyncIterator]();
      const next = await this.#reading.next();
      if (next.done) {
        this.#entries = this.#at;
        this.#at = 0;
        this.#reading = null;
        if (this.#entries === 0) break;
        continue;
      }
      this.#at += 1;
      read += 1;
      if (read % BETWEEN_TURNS === 0) await turn();
      const value = next.value as { kind: string; file?: SourceFile };
      if (value.kind !== 'file') continue;
      const at = wanted.get(value.file!.where);
      if (!at) continue;
      wanted.delete(value.file!.where);
      for (const i of at) found[i] = value.file!;
    }
    for (let i = 0; i < items.length; i += 1) {
      yield { item: items[i]!, file: found[i]! };
      found[i] = null;
    }
  }

  /** How many entries the source yielded in its last whole reading; unknown until one ended. */
  #entries: number | undefined;

  async #stop(): Promise<void> {
    const reading = this.#reading;
    this.#reading = null;
    this.#at = 0;
    await reading?.return?.();
  }
}
