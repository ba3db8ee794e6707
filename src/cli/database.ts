/**
 * `--database URL` (or WDS_DATABASE_URL) on every command that talks to the service: the
 * company's limit windows and import journal are then kept in that PostgreSQL database (DESIGN.md
 * section 14), shared with every fleet worker and every other run given it, instead of in files
 * on this machine.
 */
import type { WindowStores } from '../client/window-store.js';
import type { JournalStores } from '../stages/import/journal/store.js';
import { UsageError } from './usage-error.js';
import { sayError } from './log.js';

export interface DatabaseArgs {
  database?: string;
}

/** `--database`, described once for every command that takes it. */
export const DATABASE_OPTION = "PostgreSQL URL (env WDS_DATABASE_URL): keep the company's limit windows and import journal there, shared with every machine and fleet worker";

/** The database a command was given: `--database`, else WDS_DATABASE_URL; undefined for neither. */
export function databaseUrl(args: DatabaseArgs, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const url = args.database ?? env.WDS_DATABASE_URL;
  return url?.trim() ? url.trim() : undefined;
}

/** A command's open database, with what the client takes from it. */
export interface SharedDatabase {
  windowStores: WindowStores;
  /** Import journals, instead of the files under $XDG_STATE_HOME. */
  journals: JournalStores;
  close(): Promise<void>;
}

/**
 * Opens the database the command was given, or answers undefined when none was. A URL that does
 * not read is a usage error; a database out of reach fails here, naming its host, before any
 * request goes to the service.
 */
export async function openSharedDatabase(args: DatabaseArgs & { quiet?: boolean }): Promise<SharedDatabase | undefined> {
  const url = databaseUrl(args);
  if (!url) return undefined;
  // Loaded only when asked for: pg is not part of a command that does not use it.
  const [{ openDatabase, databaseUrlProblem }, { databaseWindowStores }, { databaseJournals }] = await Promise.all([
    import('../fleet/database.js'), import('../fleet/limit-windows.js'), import('../fleet/journal-store.js'),
  ]);
  const problem = databaseUrlProblem(url);
  if (problem) throw new UsageError(`${args.database !== undefined ? '--database' : 'WDS_DATABASE_URL'} ${problem}`);
  // Outages are said whatever --quiet says: a run that stalls on them must say why.
  const db = await openDatabase(url, (line) => sayError(`wds-files: ${line}`), { max: 4 });
  return { windowStores: databaseWindowStores(db), journals: databaseJournals(db), close: () => db.close() };
}
