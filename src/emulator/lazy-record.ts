/**
 * A record of a generated company (members, photos, a sheet's records, by member code) whose
 * entries are made from the seed when asked, not held: a company of 200,000 files starts in
 * about a second and holds only what a request has changed or taken.
 *
 * It is a Proxy with the behaviour of a plain `Record<string, T>`, so every route keeps its rules
 * as written: reading an entry through it materialises the entry (the route may change it in
 * place), writing or deleting one is kept. Listings, which only read, walk it with `peekEntry`
 * and `sortedCodes` instead, and make nothing they do not send. Keys keep a plain object's order:
 * the generated codes in index order, then codes added since, in the order they were added.
 */

/** The generated entries: slots 1 to `count`, each with its code; a slot may hold nothing. */
export interface LazySource<T> {
  readonly count: number;
  codeOf(index: number): string;
  /** The slot of a code, or undefined for a code no slot has. */
  indexOf(code: string): number | undefined;
  /** A fresh copy of the slot's entry, or undefined when the slot holds none. */
  make(index: number): T | undefined;
  /** Whether the slot holds an entry, at less cost than making it. */
  holds(index: number): boolean;
  /** True when the codes of slots 1 to count sort in index order (`<` on strings). */
  readonly sorted: boolean;
}

const GONE = Symbol('gone');

class LazyTable<T> {
  /** Slots a write, a delete or a read that may change it has taken over. */
  private readonly taken = new Map<number, T | typeof GONE>();
  /** Codes without a live slot, in the order they were added (as a plain object keeps them). */
  private readonly added = new Map<string, T>();

  constructor(readonly source: LazySource<T>) {}

  private slot(code: string): number | undefined {
    const index = this.source.indexOf(code);
    if (index === undefined) return undefined;
    const taken = this.taken.get(index);
    if (taken === GONE) return undefined;
    return taken !== undefined || this.source.holds(index) ? index : undefined;
  }

  has(code: string): boolean {
    return this.added.has(code) || this.slot(code) !== undefined;
  }

  /** The entry, made and kept: the caller may change it. */
  get(code: string): T | undefined {
    const added = this.added.get(code);
    if (added !== undefined) return added;
    const index = this.slot(code);
    if (index === undefined) return undefined;
    let entry = this.taken.get(index) as T | undefined;
    if (entry === undefined) {
      entry = this.source.make(index)!;
      this.taken.set(index, entry);
    }
    return entry;
  }

  /** The entry for reading only: a generated one is made and not kept. */
  peek(code: string): T | undefined {
    const added = this.added.get(code);
    if (added !== undefined) return added;
    const index = this.slot(code);
    if (index === undefined) return undefined;
    return (this.taken.get(index) as T | undefined) ?? this.source.make(index);
  }

  set(code: string, value: T): void {
    const index = this.slot(code);
    // A live slot keeps its place; any other code goes to the end, as on a plain object.
    if (index !== undefined && !this.added.has(code)) this.taken.set(index, value);
    else this.added.set(code, value);
  }

  delete(code: string): void {
    if (this.added.delete(code)) return;
    const index = this.slot(code);
    if (index !== undefined) this.taken.set(index, GONE);
  }

  *codes(): Generator<string> {
    for (let i = 1; i <= this.source.count; i += 1) {
      const taken = this.taken.get(i);
      if (taken === GONE) continue;
      if (taken !== undefined || this.source.holds(i)) yield this.source.codeOf(i);
    }
    yield* this.added.keys();
  }

  /** Codes in `Object.keys(...).sort()` order, merging the slots (already in order) with the added codes. */
  *sortedCodes(): Generator<string> {
    if (!this.source.sorted) {
      yield* [...this.codes()].sort();
      return;
    }
    const added = [...this.added.keys()].sort();
    let a = 0;
    for (let i = 1; i <= this.source.count; i += 1) {
      const taken = this.taken.get(i);
      if (taken === GONE || (taken === undefined && !this.source.holds(i))) continue;
      const code = this.source.codeOf(i);
      while (a < added.length && added[a]! < code) yield added[a++]!;
      yield code;
    }
    while (a < added.length) yield added[a++]!;
  }

  held(): number {
    return this.taken.size + this.added.size;
  }

  /** A plain object of every entry (state-dir saving), made without keeping the generated ones. */
  toJSON(): Record<string, T> {
    const out: Record<string, T> = {};
    for (const code of this.codes()) out[code] = this.peek(code)!;
    return out;
  }
}

const tables = new WeakMap<object, LazyTable<unknown>>();

/** A record whose entries come from `source` until written, deleted or read through the record. */
export function lazyRecord<T>(source: LazySource<T>): Record<string, T> {
  const table = new LazyTable(source);
  const target: Record<string, T> = {};
  const proxy = new Proxy(target, {
    get: (_, key) => {
      if (typeof key !== 'string') return undefined;
      if (key === 'toJSON' && !table.has(key)) return () => table.toJSON();
      return table.get(key);
    },
    set: (_, key, value: T) => {
      if (typeof key !== 'string') return false;
      table.set(key, value);
      return true;
    },
    deleteProperty: (_, key) => {
      if (typeof key === 'string') table.delete(key);
      return true;
    },
    has: (_, key) => typeof key === 'string' && table.has(key),
    ownKeys: () => [...table.codes()],
    // Object.keys asks for each key's descriptor: answered without making the entry. A reader of
    // the value goes through `get`.
    getOwnPropertyDescriptor: (_, key) =>
      typeof key === 'string' && table.has(key) ? { configurable: true, enumerable: true, writable: true, value: undefined } : undefined,
    defineProperty: (_, key, descriptor) => {
      if (typeof key !== 'string' || !('value' in descriptor)) return false;
      table.set(key, descriptor.value as T);
      return true;
    },
  });
  tables.set(proxy, table as LazyTable<unknown>);
  return proxy;
}

/** An entry for reading only: on a lazy record, a generated entry is made and not kept. */
export function peekEntry<T>(record: Record<string, T>, code: string): T | undefined {
  const table = tables.get(record) as LazyTable<T> | undefined;
  if (table) return table.peek(code);
  return Object.hasOwn(record, code) ? record[code] : undefined;
}

/** The codes of a record in `Object.keys(record).sort()` order, walked rather than collected on a lazy record. */
export function sortedCodes(record: Record<string, unknown>): Iterable<string> {
  const table = tables.get(record);
  return table ? table.sortedCodes() : Object.keys(record).sort();
}

/** The codes of a record in `Object.keys` order, walked on a lazy record. */
export function codesOf(record: Record<string, unknown>): Iterable<string> {
  const table = tables.get(record);
  return table ? table.codes() : Object.keys(record);
}

/** How many entries a lazy record holds (written, deleted or taken): 0 for one only read by listings. */
export function heldCount(record: Record<string, unknown>): number | undefined {
  return tables.get(record)?.held();
}

/** `[code, entry]` of every entry in key order, for reading only (see `peekEntry`). */
export function* peekEntries<T>(record: Record<string, T>): Generator<[string, T]> {
  for (const code of codesOf(record)) yield [code, peekEntry(record, code)!];
}
