/**
 * Import journals in PostgreSQL (DESIGN.md sections 8 and 14): each company's lines in
 * `wds_fleet.journal_lines`, in the order written, keyed by the consumer key's sha256 as the limit
 * windows are. A line is committed before the request it describes is sent, so a run taken over
 * by another machine settles and skips by what the dead one left.
 */
import type { JournalStore, JournalStores } from '../stages/import/journal/store.js';
import type { FleetDatabase } from './database.js';
import { companyKey } from './limit-windows.js';

class DatabaseJournal implements JournalStore {
  readonly where: string;

  constructor(private readonly db: FleetDatabase, private readonly company: string) {
    this.where = `in PostgreSQL at ${db.place} (company ${company.slice(0, 16)})`;
  }

  async load(): Promise<string[]> {
    const { rows } = await this.db.patiently((tx) => tx.executeSql('SELECT line FROM wds_fleet.journal_lines WHERE company = $1 ORDER BY seq', [this.company]));
    return rows.map((row) => String(row.line));
  }

  async append(lines: string[]): Promise<void> {
    await this.db.patiently((tx) => tx.executeSql(
      'INSERT INTO wds_fleet.journal_lines (company, line) SELECT $1, line FROM unnest($2::text[]) WITH ORDINALITY AS l(line, n) ORDER BY n',
      [this.company, lines],
    ));
  }
}

/** Each company's import journal in `db`, by consumer key. */
export function databaseJournals(db: FleetDatabase): JournalStores {
  return { journalFor: (consumerKey) => new DatabaseJournal(db, companyKey(consumerKey)) };
}
