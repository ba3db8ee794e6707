/**
 * Every run ends with a report: each item's outcome and why (DESIGN.md section 2). Outcomes are
 * the same for every pipeline; `converted` is an import's `ok` after normalisation.
 */
import { jsonWithItems } from '../util/json-items.js';
import { ItemList } from './report-spill.js';

/** Every outcome a file can have, in the order reports list them. */
export const OUTCOMES = ['ok', 'converted', 'skipped', 'invalid', 'conflict', 'failed', 'unknown'] as const;
/**
 * What became of a file: `ok`; `converted` (an import's ok after conversion); `skipped` (nothing to
 * do, with the reason); `invalid` (refused before sending); `conflict` (the service holds another
 * file there); `failed`; `unknown` (the answer was lost and nothing could tell).
 */
export type Outcome = (typeof OUTCOMES)[number];

/** One file's outcome in a {@link RunReport}. */
export interface ItemReport {
  /** The item's identity (for exports, the manifest key). */
  key: string;
  /** The member's code. */
  code: string;
  /** The file's name at the service. */
  file_name: string;
  /** What became of it. */
  outcome: Outcome;
  /** Why, in words a person acts on (for every outcome but a plain `ok`). */
  reason?: string;
  /** Where the file is (exports) or came from (imports). */
  path?: string;
  /** Its size in bytes. */
  size?: number;
  /** Its sha256, in hex. */
  sha256?: string;
}

/**
 * Which signal a stopped run's abort signal names: the CLI aborts with the signal's name as the
 * reason; any other stop counts as an interruption by the user (SIGINT).
 */
export function interruptedBy(signal: AbortSignal): 'SIGINT' | 'SIGTERM' {
  return signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT';
}

/** Every run's report: each file's outcome and why, with counts. `toJSON()` is what `--report` writes. */
export class RunReport {
  /** The items: in memory, unless `keepItemsOnDisk` was called. */
  private list = new ItemList<ItemReport>();
  /** False once `countOnly` was called: items are counted, not kept. */
  private keeping = true;
  /** The spill's items once `items` read them, until the next `add`. */
  private readBack: ItemReport[] | null = null;
  private closed = false;
  private count = 0;
  private readonly problemItems: ItemReport[] = [];
  /** Keys of the items added, once `trackKeys` was called. */
  private keys: Set<string> | null = null;
  /** How many files had each outcome. */
  readonly counts: Record<Outcome, number> = { ok: 0, converted: 0, skipped: 0, invalid: 0, conflict: 0, failed: 0, unknown: 0 };
  /** When the run started (ms since the epoch). */
  readonly startedAt = Date.now();
  /** When it ended (ms since the epoch); 0 while it runs. */
  finishedAt = 0;
  /** Bytes of the files that went through (`ok` and `converted`). */
  bytes = 0;
  /** Remarks about the run as a whole. */
  notes: string[] = [];
  /**
   * Set when the run was stopped by a signal before it had done everything: `total` is how many
   * items there were in all (when known). The items it did not reach are in `items` as `skipped`
   * where the run knew them (`addUnreached`), and counted in `unreached`.
   */
  interrupted: {
    /** The signal that stopped it. */
    signal: 'SIGINT' | 'SIGTERM';
    /** How many items there were in all, when known. */
    total?: number;
    /** Items reported `skipped` because the stop came before the run reached them. */
    unreached?: number;
  } | null = null;

  constructor(
    /** The command that ran, such as `photos export`. */
    readonly command: string,
  ) {}

  /**
   * Keeps the items in a temporary file from here on, a part at a time (ItemList), instead of
   * memory: an export's items grow with its files. Reading them back (`items`, `eachItem`,
   * `jsonParts`) reads the file. Should the temporary folder refuse them, they stay in memory.
   */
  keepItemsOnDisk(): void {
    this.list.keepOnDisk();
  }

  /**
   * Keeps no item from here on, only the counts, the bytes and the first problems: for a caller
   * that writes no per-file report (the CLI without --report), an export's 20,000 items written
   * to a temporary file cost its main thread a tenth of a second, never to be read.
   * `items`, `eachItem`, `toJSON` and `jsonParts` then throw.
   */
  countOnly(): void {
    this.keeping = false;
    this.list.close();
  }

  /** Counts a file skipped when items are not kept (`countOnly`), without making its item. */
  countSkipped(): void {
    if (this.keeping) throw new Error('countSkipped is for a report that keeps counts only; give add() the item');
    if (this.closed) this.checkOpen();
    this.count += 1;
    this.counts.skipped += 1;
  }

  /** Records one file's outcome. */
  add(item: ItemReport): void {
    if (this.closed) this.checkOpen();
    this.readBack = null;
    if (this.keeping) this.list.push(item);
    this.keys?.add(item.key);
    this.count += 1;
    this.counts[item.outcome] += 1;
    if (item.outcome === 'ok' || item.outcome === 'converted') this.bytes += item.size ?? 0;
    if (PROBLEMS.has(item.outcome) && this.problemItems.length < FIRST_PROBLEMS) this.problemItems.push(item);
  }

  /** Whether items are kept (not after `countOnly`). */
  get keepsItems(): boolean {
    return this.keeping;
  }

  /** How many items there are. */
  get itemCount(): number {
    return this.count;
  }

  /**
   * Each file's outcome, in the order they were settled. Items kept on disk are read back at the
   * first access and then held in memory (until the next `add`), so that indexing it in a loop
   * reads the file once; `eachItem` goes through them without holding them all. Throws after `close`.
   */
  get items(): ItemReport[] {
    this.checkOpen();
    const held = this.list.inMemory;
    if (held) return held;
    this.readBack ??= [...this.eachItem()];
    return this.readBack;
  }

  /** The items one at a time, in the order they were settled, without holding them all at once. Throws after `close`. */
  *eachItem(): Generator<ItemReport> {
    this.checkOpen();
    yield* this.list.read();
  }

  /**
   * Lets go of the items: the temporary file that keeps them (`keepItemsOnDisk`) is closed and
   * its disk space freed. To be called once the items were written out; `items`, `eachItem`,
   * `toJSON` and `jsonParts` throw after it, while the counts and the summary stay.
   */
  close(): void {
    this.closed = true;
    this.list.close();
    this.readBack = null;
  }

  private checkOpen(): void {
    if (this.closed) throw new Error(`the report of ${this.command} was closed: its items are no longer readable`);
    if (!this.keeping) throw new Error(`the report of ${this.command} kept counts only (countOnly): it has no items to read`);
  }

  /**
   * Keeps the key of each item added from here on, so that `addUnreached` can tell which files a
   * stopped run did not reach: an import's files are all named before the first is read.
   */
  trackKeys(): void {
    this.keys ??= new Set();
  }

  /**
   * A stopped run's files that have no item yet, each reported `skipped` with `reason`, so that
   * the report of an interrupted run still names every file (DESIGN.md section 2);
   * `interrupted.unreached` counts them. Needs `trackKeys` and `interrupted` set first.
   */
  addUnreached(items: Iterable<Omit<ItemReport, 'outcome' | 'reason'>>, reason: string): void {
    if (!this.keys || !this.interrupted) throw new Error('addUnreached needs trackKeys() and the run marked interrupted');
    let unreached = 0;
    for (const item of items) {
      if (this.keys.has(item.key)) continue;
      this.add({ ...item, outcome: 'skipped', reason });
      unreached += 1;
    }
    this.interrupted.unreached = (this.interrupted.unreached ?? 0) + unreached;
  }

  /** `addUnreached` for a report that keeps counts only (`countOnly`): `count` files were not reached. */
  countUnreached(count: number): void {
    if (this.keeping || !this.interrupted) throw new Error('countUnreached is for a stopped run whose report keeps counts only; give addUnreached the items');
    this.count += count;
    this.counts.skipped += count;
    this.interrupted.unreached = (this.interrupted.unreached ?? 0) + count;
  }

  /** Items the run settled: all of them but those a stop left unreached (`addUnreached`). */
  get doneCount(): number {
    return this.count - (this.interrupted?.unreached ?? 0);
  }

  /** The first FIRST_PROBLEMS items that did not go through, for a run's closing lines. */
  get firstProblems(): readonly ItemReport[] {
    return this.problemItems;
  }

  /** Marks the end of the run. */
  finish(): void {
    this.finishedAt = Date.now();
  }

  /** Items that did not go through: invalid, conflicting, failed or of unknown fate (exit code 3). */
  get problems(): number {
    return this.counts.invalid + this.counts.conflict + this.counts.failed + this.counts.unknown;
  }

  /** The report without its items: command, duration, counts, bytes, notes, and `extra`. */
  summary(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      command: this.command,
      duration_ms: (this.finishedAt || Date.now()) - this.startedAt,
      counts: { ...this.counts },
      bytes: this.bytes,
      ...(this.interrupted ? { interrupted: this.interrupted } : {}),
      ...extra,
      notes: this.notes,
    };
  }

  /** The summary with every item. */
  toJSON(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { ...this.summary(extra), items: this.items };
  }

  /**
   * The text of `JSON.stringify(transform(toJSON(extra)), null, 2)` and a newline, a part of the
   * items at a time (src/util/json-items.ts; bench/notes.md, "Reports"). `transform` (the CLI's
   * redaction) must work value by value.
   */
  *jsonParts(extra: Record<string, unknown> = {}, transform: <T>(value: T) => T = (value) => value): Generator<string> {
    this.checkOpen();
    yield* jsonWithItems(this.summary(extra), this.eachItem(), transform);
  }
}

/** The line a stopped run ends with: how far it came, and that a rerun continues. */
export function interruptedLine(report: RunReport): string {
  const { signal, total } = report.interrupted!;
  return `interrupted: ${report.doneCount} of ${total ?? '?'} done; run it again to continue (stopped by ${signal})`;
}

/** Problems a report keeps at hand for the closing lines (the CLI prints as many). */
export const FIRST_PROBLEMS = 50;

const PROBLEMS = new Set<Outcome>(['invalid', 'conflict', 'failed', 'unknown']);
