/**
 * Where an import journal's lines live when not in a file on this machine: a store shared by
 * many machines (the fleet keeps them in PostgreSQL, src/fleet/journal-store.ts), so that a run
 * taken over by another machine settles and skips by what the dead one wrote. Each line is
 * stored before the request it describes is sent.
 */
export interface JournalStore {
  /** Where the journal is, for messages. */
  readonly where: string;
  /** Every line so far, in the order written (each a JSON text). */
  load(): Promise<string[]>;
  /** Adds lines after the others, durably, before it resolves. */
  append(lines: string[]): Promise<void>;
  /**
   * Optional: reads every line, as `load` does, and in the same step replaces them all by what
   * `fold` answers for them (null: kept as they are), while no other run appends; answers the
   * lines the journal holds then. A shared journal compacted so grows with the files it knows,
   * not with the runs.
   */
  compact?(fold: (lines: string[]) => string[] | null): Promise<string[]>;
}

/** Each company's journal, by consumer key. */
export interface JournalStores {
  /** The store of one company's journal, named by its consumer key. */
  journalFor(consumerKey: string): JournalStore;
}
