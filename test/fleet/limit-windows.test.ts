/**
 * The company's limit windows in PostgreSQL (DESIGN.md sections 8 and 14): CLI runs on
 * "different machines" (each its own cache folder, so no state file is shared) given one
 * `--database` share the windows, and the emulator, which enforces the limits, answers no 429.
 *
 * The emulator allows 2 update requests a minute and runs its clock 10 times faster than real
 * time, so its minute is 6 real seconds; WDS_CLIENT_LIMITS gives the CLI a window of 7 s.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET, type TestEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import { noisyJpeg, resetStats, stats, writeFiles } from '../import/photo-helpers.js';
import { usePostgres } from '../helpers/postgres.js';
import { openDatabase } from '../../src/fleet/database.js';
import { companyKey, databaseWindowStores } from '../../src/fleet/limit-windows.js';

const WINDOW = { clockSpeed: 10, maintenance: false, seed: 'samples/company', limits: { updatesPerMinute: 2 } } as const;

const db = usePostgres();

async function membersByPhoto(emu: TestEmulator): Promise<{ withPhoto: string[]; without: string[] }> {
  const state = (await emu.control('GET', '/state')) as EmulatorState;
  const codes = (has: boolean): string[] => state.members.filter((m) => (m.photo !== null) === has).map((m) => m.code).sort();
  return { withPhoto: codes(true), without: codes(false) };
}

async function photoFolder(codes: string[], seed: number): Promise<string> {
  const files: Record<string, Buffer> = {};
  for (const [i, code] of codes.entries()) files[`${code}.jpg`] = await noisyJpeg(48, 48, seed + i);
  return writeFiles(tempDir('wds-pg-window-'), files);
}

/** A photo import as another machine would run it: its own cache folder, so its own state file. */
function importOn(emu: TestEmulator, dir: string, extra: string[]): Promise<CliRun> {
  const env = { XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-machine-')), WDS_CLIENT_LIMITS: 'update=2/7s' };
  return runCli(['photos', 'import', dir, '--json', '--no-trim', ...connectionArgs(emu), ...extra], env);
}

describe('two imports on two machines', () => {
  const emu = useEmulator(WINDOW);

  it('share the update window through --database: 0 answered 429, and the table shows no key or secret', async () => {
    const { withPhoto, without } = await membersByPhoto(emu());
    // Each import registers one photo and replaces one: two update requests each, four in all
    // against a window of two.
    const a = await photoFolder([without[0]!, withPhoto[0]!], 10);
    const b = await photoFolder([without[1]!, withPhoto[1]!], 20);
    await resetStats(emu());
    const [runA, runB] = await Promise.all([importOn(emu(), a, ['--database', db.url]), importOn(emu(), b, ['--database', db.url])]);
    expect(runA.code, runA.stderr).toBe(0);
    expect(runB.code, runB.stderr).toBe(0);
    const s = await stats(emu());
    expect(s.update_requests).toBe(4);
    expect(s.rate_limited).toBe(0);
    // One of them waited for the other's slots, as with a shared state file.
    expect(`${runA.stderr}${runB.stderr}`).toMatch(/waiting \d+\.\d s: 2 update requests per 7 s reached/);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ company: string; api: string; windows: { update: number[] } }>('SELECT company, api, windows FROM wds_fleet.limit_windows');
      expect(rows.map((r) => [r.company, r.api])).toEqual([[companyKey(KEY), 'v2']]);
      // The window's last requests, the earlier ones dropped once out of it.
      expect(rows[0]!.windows.update.length).toBeGreaterThan(0);
      expect(rows[0]!.windows.update.length).toBeLessThanOrEqual(2);
      const everything = JSON.stringify((await client.query('SELECT * FROM wds_fleet.limit_windows')).rows);
      expect(everything).not.toContain(KEY);
      expect(everything).not.toContain(SECRET);
    } finally {
      await client.end();
    }
  }, 120_000);

  it('without it, each keeps its own window and the service refuses what the two exceed', async () => {
    // Six emulator seconds later the earlier test's requests have left the service's window.
    await new Promise((resolve) => setTimeout(resolve, 7000));
    const { withPhoto, without } = await membersByPhoto(emu());
    const a = await photoFolder([without[0]!, withPhoto[0]!], 30);
    const b = await photoFolder([without[1]!, withPhoto[1]!], 40);
    await resetStats(emu());
    const [runA, runB] = await Promise.all([importOn(emu(), a, []), importOn(emu(), b, [])]);
    expect(runA.code, runA.stderr).toBe(0);
    expect(runB.code, runB.stderr).toBe(0);
    expect((await stats(emu())).rate_limited).toBeGreaterThan(0);
  }, 120_000);
});

describe('a database out of reach', () => {
  const emu = useEmulator({ maintenance: false });

  it('stops the command before any request, naming the host and never the password', async () => {
    const closed = `postgres://wds:hunter2-secret@127.0.0.1:${db.port + 1}/fleet`;
    const stats0 = await stats(emu());
    const run = await runCli(['api', 'GET', '/members', ...connectionArgs(emu()), '--database', closed]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`PostgreSQL at 127.0.0.1:${db.port + 1}/fleet`);
    expect(run.stderr).toMatch(/ECONNREFUSED/);
    expect(run.stderr).not.toContain('hunter2-secret');
    expect((await stats(emu())).requests).toEqual(stats0.requests);
  }, 60_000);

  it('refuses a URL that is not PostgreSQL\'s as a usage error', async () => {
    const run = await runCli(['api', 'GET', '/members', ...connectionArgs(emu())], { WDS_DATABASE_URL: 'mysql://db.example/fleet' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('WDS_DATABASE_URL must be a URL such as postgres://');
  }, 60_000);

  it('is waited for while a run is under way, said once, and the run goes on when it is back', async () => {
    const lines: string[] = [];
    const shared = await openDatabase(db.url, (line) => lines.push(line));
    try {
      const store = databaseWindowStores(shared).storeFor('outage-key', 'v2');
      await store.update((stamps) => ({ stamps: { ...stamps, update: [1] }, result: undefined }));
      await db.stop();
      const pending = store.update((stamps) => ({ stamps: { ...stamps, update: [...stamps.update, 2] }, result: stamps.update.length }));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await db.start();
      expect(await pending).toBe(1);
      expect(lines[0]).toMatch(new RegExp(`^PostgreSQL at 127\\.0\\.0\\.1:${db.port}/wds cannot be reached \\(.*\\); waiting for it$`));
      expect(lines.at(-1)).toMatch(/answers again after \d+ s; going on$/);
      expect(lines.join('\n')).not.toContain('test-password');
    } finally {
      await shared.close();
    }
  }, 60_000);
});
