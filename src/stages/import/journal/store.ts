/**
 * Where an import journal's lines live when not in a file on this machine: a store shared by
 * many machines (the fleet keeps them in PostgreSQL, src/fleet/journal-store.ts), so that a run
 * taken over by another machine settles and skips by what the dead one wrote. Each line is
 * stored before the request it describes is sent.
 */
export interface JournalStore {
  /** Where the journal is, for messages. */
  readonly where: string;
  /**
   * Hands every line so far to `each` (a JSON text), in the order written, a part at a time: a
   * journal knows every file ever imported. `start` is called before the first line of each
   * attempt: a read tried again hands its lines over again from the first.
   */
  load(each: (line: string) => void, start: () => void): Promise<void>;
  /** Adds lines after the others, durably, before it resolves. */
  append(lines: string[]): Promise<void>;
  /**
   * Optional: calls `fold` with `read`, which hands every line to `each` as `load` does; then, in
   * the same step and while no other run appends, replaces them all by the lines `fold` answers
   * (null: kept as they are). `fold` is called again, reading from the first line, when the step
   * is tried again. A shared journal compacted so grows with the files it knows, not with the runs.
   */
  compact?(fold: (read: (each: (line: string) => void) => Promise<void>) => Promise<Iterable<string> | null>): Promise<void>;
}

/** Each company's journal, by consumer key. */
export interface JournalStores {
  /** The store of one company's journal, named by its consumer key. */
  journalFor(consumerKey: string): JournalStore;
}
