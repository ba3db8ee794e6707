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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, photoRequests, resetStats, sha256 } from '../import/photo-helpers.js';
import { generatedCodes, pause, photoFolder } from '../import/journal-helpers.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const emu = useEmulator({
  generate: { members: 4, photo_ratio: 0, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] },
  limits: { updatesPerMinute: 10_000 },
  // Each task waits 3 s before it runs: long enough to kill the run while it follows its task.
  taskTiming: { waitMs: 3000, runMs: 10, perItemMs: 0 },
});

let db: TestPostgres;
beforeAll(async () => {
  db = await startPostgres();
}, 120_000);
afterAll(async () => {
  await db?.dispose();
});

/** A machine of its own: its own state folder (journal files) and cache folder (limit windows). */
const machine = (): NodeJS.ProcessEnv => ({ XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-state-')), XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-cache-')) });

async function journalKinds(): Promise<string[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ line: string }>('SELECT line FROM wds_fleet.journal_lines ORDER BY seq').catch(() => ({ rows: [] as { line: string }[] }));
    return rows.map((r) => (JSON.parse(r.line) as { t: string }).t);
  } finally {
    await client.end();
  }
}

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
