/**
 * Import journals in PostgreSQL (DESIGN.md sections 8 and 14): each company's lines in
 * `wds_fleet.journal_lines`, in the order written, keyed by the consumer key's sha256 as the limit
 * windows are. A line is committed before the request it describes is sent, so a run taken over
 * by another machine settles and skips by what the dead one left. Each run's start folds the
 * lines of requests settled into one line per file applied, so the table does not grow with use.
 */
import type { JournalStore, JournalStores } from '../stages/import/journal/store.js';
import type { Executor, FleetDatabase } from './database.js';
import { companyKey } from './limit-windows.js';

class DatabaseJournal implements JournalStore {
  readonly where: string;

  constructor(private readonly db: FleetDatabase, private readonly company: string) {
    this.where = `in PostgreSQL at ${db.place} (company ${company.slice(0, 16)})`;
  }

  async load(each: (line: string) => void, start: () => void): Promise<void> {
    await this.db.patiently(async (tx) => {
      start();
      await eachLine(tx, this.company, each);
    });
  }

  async append(lines: string[]): Promise<void> {
    await this.db.patiently(async (tx) => {
      // Shared: appends of many runs go together; a compaction waits for them, and they for it.
      await tx.executeSql('SELECT pg_advisory_xact_lock_shared(hashtext($1))', [this.lockName]);
      await insert(tx, this.company, lines);
    });
  }

  /**
   * Reads and folds the company's lines under the journal's exclusive lock, so that no append is
   * under way: every line committed is read, and none lands between the read and the rewrite.
   */
  async compact(fold: (read: (each: (line: string) => void) => Promise<void>) => Promise<Iterable<string> | null>): Promise<void> {
    await this.db.patiently(async (tx) => {
      await tx.executeSql('SELECT pg_advisory_xact_lock(hashtext($1))', [this.lockName]);
      const folded = await fold((each) => eachLine(tx, this.company, each));
      if (!folded) return;
      await tx.executeSql('DELETE FROM wds_fleet.journal_lines WHERE company = $1', [this.company]);
      let lines: string[] = [];
      for (const line of folded) {
        lines.push(line);
        if (lines.length < ROWS_AT_ONCE) continue;
        await insert(tx, this.company, lines);
        lines = [];
      }
      await insert(tx, this.company, lines);
    });
  }

  private get lockName(): string {
    return `wds-fleet-journal:${this.company}`;
  }
}

/** Rows read or written in one statement: a company's journal is not held whole. */
const ROWS_AT_ONCE = 2000;

/** Hands each of the company's lines to `each`, in the order written, ROWS_AT_ONCE at a time. */
async function eachLine(tx: Executor, company: string, each: (line: string) => void): Promise<void> {
  for (let after = 0; ;) {
    const { rows } = await tx.executeSql(
      'SELECT seq, line FROM wds_fleet.journal_lines WHERE company = $1 AND seq > $2 ORDER BY seq LIMIT $3', [company, after, ROWS_AT_ONCE],
    );
    for (const row of rows) each(String(row.line));
    if (rows.length < ROWS_AT_ONCE) return;
    after = Number(rows.at(-1)!.seq);
  }
}

async function insert(tx: Executor, company: string, lines: string[]): Promise<void> {
  if (!lines.length) return;
  await tx.executeSql(
    'INSERT INTO wds_fleet.journal_lines (company, line) SELECT $1, line FROM unnest($2::text[]) WITH ORDINALITY AS l(line, n) ORDER BY n',
    [company, lines],
  );
}

/** Each company's import journal in `db`, by consumer key. */
export function databaseJournals(db: FleetDatabase): JournalStores {
  return { journalFor: (consumerKey) => new DatabaseJournal(db, companyKey(consumerKey)) };
}
