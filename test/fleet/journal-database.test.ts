/**
 * The import journal in PostgreSQL (DESIGN.md sections 8 and 14): an import given `--database` is
 * killed (SIGKILL, the real CLI) while it follows the task of its request, and the rerun on
 * "another machine" (its own state and cache folders, the same database) settles that request by
 * its task and sends nothing twice. The same rerun without the database, knowing nothing of the first run,
 * sends the photos again: the database's journal is what prevents it.
 */
import { readFile } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, photoRequests, resetStats, sha256 } from '../import/photo-helpers.js';
import { generatedCodes, pause, photoFolder } from '../import/journal-helpers.js';
import { usePostgres } from '../helpers/postgres.js';
import { openDatabase } from '../../src/fleet/database.js';
import { databaseJournals } from '../../src/fleet/journal-store.js';
import { companyKey } from '../../src/fleet/limit-windows.js';
import { ImportJournal } from '../../src/stages/import/journal/journal.js';

const emu = useEmulator({
  generate: { members: 4, photo_ratio: 0, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] },
  limits: { updatesPerMinute: 10_000 },
  // Each task waits 3 s before it runs: long enough to kill the run while it follows its task.
  taskTiming: { waitMs: 3000, runMs: 10, perItemMs: 0 },
});

const db = usePostgres();

/** A machine of its own: its own state folder (journal files) and cache folder (limit windows). */
const machine = (): NodeJS.ProcessEnv => ({ XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-state-')), XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-cache-')) });

type JournalRow = { t: string; id?: string; target?: string; sha256?: string };

async function journalRows(): Promise<JournalRow[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ line: string }>('SELECT line FROM wds_fleet.journal_lines ORDER BY seq').catch(() => ({ rows: [] as { line: string }[] }));
    return rows.map((r) => JSON.parse(r.line) as JournalRow);
  } finally {
    await client.end();
  }
}

const journalKinds = async (): Promise<string[]> => (await journalRows()).map((row) => row.t);

describe('an import killed mid-request, taken over on another machine through --database', () => {
  it('settles the lost request from the database\'s journal and sends nothing twice', { timeout: 180_000 }, async () => {
    const codes = generatedCodes(4);
    const { dir, files } = await photoFolder(codes, 31);
    await resetStats(emu());
    const child = spawnCli(['photos', 'import', dir, '--no-trim', '--database', db.url, ...connectionArgs(emu())], machine());
    const ended = finished(child);
    while (!(await journalKinds()).includes('task') && child.exitCode === null) await pause(50);
    child.kill('SIGKILL');
    const killed = await ended;
    expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL');
    expect(await journalKinds()).toEqual(['send', 'task']);

    const report = join(tempDir(), 'report.json');
    const rerun = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, '--database', db.url, ...connectionArgs(emu())], machine());
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    const { items, notes } = JSON.parse(await readFile(report, 'utf8')) as { items: { code: string; outcome: string }[]; notes: string[] };
    expect(items.map((i) => i.outcome)).toEqual(codes.map(() => 'skipped'));
    expect(notes.join('\n')).toMatch(/sent by an earlier run .*: its task \d+ ended OK/);
    expect(await photoRequests(emu())).toMatchObject({ register: 1, update: 0 });
    const held = await photoHashes(emu());
    for (const code of codes) expect(held.get(code), code).toBe(sha256(files.get(code)!));

    // Without the database the rerun knows nothing of the first run, and sends every photo again.
    const blind = await runCli(['photos', 'import', dir, '--no-trim', ...connectionArgs(emu())], machine());
    expect(blind.code, blind.stdout + blind.stderr).toBe(0);
    expect(await photoRequests(emu())).toMatchObject({ register: 1, update: 1 });
  });
});

describe('the import journal in the database is compacted', () => {
  it('folds a finished import\'s rows into one row per photo applied at the next import\'s start, and keeps an interrupted import\'s request', { timeout: 240_000 }, async () => {
    const codes = generatedCodes(4);
    const importFrom = async (seed: number): Promise<void> => {
      const { dir } = await photoFolder(codes, seed);
      const run = await runCli(['photos', 'import', dir, '--no-trim', '--database', db.url, ...connectionArgs(emu())], machine());
      expect(run.code, run.stdout + run.stderr).toBe(0);
    };
    const applied = (rows: JournalRow[]): string[] => rows.filter((r) => r.t === 'applied').map((r) => r.target!).sort();
    // What a run writes besides its requests: the time the listing showed each photo it knows (`seen`), at most one a photo.
    const requestLines = (rows: JournalRow[]): string[] => rows.filter((r) => r.t !== 'applied' && r.t !== 'seen').map((r) => r.t);
    const seen = (rows: JournalRow[]): number => rows.filter((r) => r.t === 'seen').length;

    await importFrom(51);
    const first = await journalRows();
    await importFrom(52);
    const second = await journalRows();
    // The first import's request rows are gone: folded into one row per photo, then the second import's own.
    expect(applied(second)).toEqual(codes.map((code) => `photo:${code}`));
    expect(requestLines(second)).toEqual(['send', 'task', 'end']);
    expect(seen(second)).toBeLessThanOrEqual(codes.length);
    const firstSend = first.filter((r) => r.t === 'send').map((r) => r.id);
    expect(second.filter((r) => firstSend.includes(r.id))).toEqual([]);

    // An import killed while it follows its task: the next import's start keeps its request, and settles it.
    const { dir, files } = await photoFolder(codes, 53);
    await resetStats(emu());
    const child = spawnCli(['photos', 'import', dir, '--no-trim', '--database', db.url, ...connectionArgs(emu())], machine());
    const ended = finished(child);
    const earlier = new Set(second.map((r) => r.id));
    while (!(await journalRows()).some((r) => r.t === 'task' && !earlier.has(r.id)) && child.exitCode === null) await pause(50);
    child.kill('SIGKILL');
    expect((await ended).signal).toBe('SIGKILL');
    const killed = await journalRows();
    expect(requestLines(killed)).toEqual(['send', 'task']);
    const open = killed.find((r) => r.t === 'send')!.id;

    const report = join(tempDir(), 'report.json');
    const rerun = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, '--database', db.url, ...connectionArgs(emu())], machine());
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    const { notes } = JSON.parse(await readFile(report, 'utf8')) as { notes: string[] };
    expect(notes.join('\n')).toMatch(/sent by an earlier run .*: its task \d+ ended OK/);
    expect(await photoRequests(emu())).toMatchObject({ register: 0, update: 1 });
    const held = await photoHashes(emu());
    for (const code of codes) expect(held.get(code), code).toBe(sha256(files.get(code)!));
    const after = await journalRows();
    expect(after.filter((r) => r.t !== 'applied' && r.t !== 'seen').map((r) => `${r.t} ${r.id}`)).toEqual([`send ${open}`, `task ${open}`, `end ${open}`]);
    expect(seen(after)).toBeLessThanOrEqual(codes.length);
    expect(applied(after)).toEqual(codes.map((code) => `photo:${code}`));
  });
});

describe('a database journal longer than one read', () => {
  it('is read and folded in parts: 5,000 photos applied by two requests come back whole, one row each', { timeout: 120_000 }, async () => {
    const database = await openDatabase(db.url, () => undefined);
    try {
      const stores = databaseJournals(database);
      const codes = Array.from({ length: 5000 }, (_, i) => `L${String(i).padStart(5, '0')}`);
      const journal = await ImportJournal.openStore(stores.journalFor('long-journal-key'));
      for (const [n, part] of [codes.slice(0, 2500), codes.slice(2500)].entries()) {
        const files = part.map((code) => ({ code, sha256: `sha-${code}`, before: null }));
        const id = await journal.sending('photo', 'register', files);
        await journal.task(id, 500 + n);
        await journal.settled(id, files.map((_, i) => i % 1000 !== 0), `task ${500 + n} ended OK`);
      }
      const rowsOf = async (): Promise<number> => Number((await database.transaction((tx) => tx.executeSql('SELECT count(*) AS n FROM wds_fleet.journal_lines WHERE company = $1', [companyKey('long-journal-key')]))).rows[0]!.n);
      expect(await rowsOf()).toBe(6);
      // The next run's start folds the requests into a row a photo applied; every one of them reads back.
      const later = await ImportJournal.openStore(stores.journalFor('long-journal-key'));
      const applied = codes.filter((_, i) => (i % 2500) % 1000 !== 0);
      expect(await rowsOf()).toBe(applied.length);
      for (const code of codes) expect(later.applied(`photo:${code}`)?.sha256, code).toBe(applied.includes(code) ? `sha-${code}` : undefined);
      // Read again, in parts as well, with nothing left to fold.
      const again = await ImportJournal.openStore(stores.journalFor('long-journal-key'));
      expect(await rowsOf()).toBe(applied.length);
      expect(again.applied(`photo:${applied.at(-1)}`)).toMatchObject({ sha256: `sha-${applied.at(-1)}` });
      expect(again.unsettled('photo')).toEqual([]);
    } finally {
      await database.close();
    }
  });
});
