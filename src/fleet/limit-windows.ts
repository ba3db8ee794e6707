/**
 * The company's limit windows in PostgreSQL (DESIGN.md sections 8 and 14), shared by every worker
 * and every CLI run given the same database: one row per company and interface, changed under a
 * row lock (SELECT ... FOR UPDATE), so that two machines never both take the window's last slot.
 * The row is keyed by a hash of the consumer key; neither the key nor the secret is stored.
 */
import { createHash } from 'node:crypto';
import { emptyStamps, type WindowStamps, type WindowStore, type WindowStores, type WindowsOf } from '../client/window-store.js';
import type { FleetDatabase } from './database.js';

/** The row's key for a company: the consumer key's sha256, as the state file's name hashes it. */
export function companyKey(consumerKey: string): string {
  return createHash('sha256').update(consumerKey).digest('hex');
}

/** Stamps as saved, each list kept to numbers (a row edited by hand must not break the limiter). */
function readStamps(saved: unknown): WindowStamps {
  const stamps = emptyStamps();
  if (!saved || typeof saved !== 'object') return stamps;
  for (const name of Object.keys(stamps) as (keyof WindowStamps)[]) {
    const list = (saved as Record<string, unknown>)[name];
    if (Array.isArray(list)) stamps[name] = list.filter((t): t is number => typeof t === 'number');
  }
  return stamps;
}

class DatabaseWindowStore implements WindowStore {
  constructor(private readonly db: FleetDatabase, private readonly company: string, private readonly api: WindowsOf) {}

  update<T>(change: (stamps: WindowStamps) => { stamps: WindowStamps; result: T }): Promise<T> {
    return this.db.patiently(async (tx) => {
      const select = 'SELECT windows FROM wds_fleet.limit_windows WHERE company = $1 AND api = $2 FOR UPDATE';
      let found = await tx.executeSql(select, [this.company, this.api]);
      if (!found.rows.length) {
        // The company's first request anywhere: make its row, then lock it as every later caller does.
        await tx.executeSql('INSERT INTO wds_fleet.limit_windows (company, api, windows) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [this.company, this.api, emptyStamps()]);
        found = await tx.executeSql(select, [this.company, this.api]);
      }
      const { stamps, result } = change(readStamps(found.rows[0]?.windows));
      await tx.executeSql('UPDATE wds_fleet.limit_windows SET windows = $3, updated_at = now() WHERE company = $1 AND api = $2', [this.company, this.api, stamps]);
      return result;
    });
  }
}

/** Each company's windows in `db`, by consumer key. */
export function databaseWindowStores(db: FleetDatabase): WindowStores {
  return { storeFor: (consumerKey, api) => new DatabaseWindowStore(db, companyKey(consumerKey), api) };
}
