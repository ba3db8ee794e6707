/**
 * The client's update window as real `photos import` runs use it (DESIGN.md section 8, "Limits
 * are per company"): shared by every run with the same consumer key through the state file under
 * XDG_CACHE_HOME, however the base URL is spelled, and its waits counted in `waited_ms`.
 *
 * The emulator allows 2 update requests a minute and runs its clock 10 times faster than real
 * time, so its minute is 6 real seconds; WDS_CLIENT_LIMITS gives the CLI a window of 7 s, a
 * second to spare for a loaded machine, where a request may arrive well after it took its slot.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET, type TestEmulator } from '../helpers/emulator.js';
import { finished, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { noisyJpeg, photoHashes, resetStats, sha256, stats, writeFiles } from '../import/photo-helpers.js';
import type { EmulatorState } from '../helpers/export.js';

const WINDOW = { clockSpeed: 10, maintenance: false, seed: 'samples/company', limits: { updatesPerMinute: 2 } } as const;
const CLIENT_WINDOW = 'update=2/7s';

/** Members of the company with a photo and without one, in code order. */
async function membersByPhoto(emu: TestEmulator): Promise<{ withPhoto: string[]; without: string[] }> {
  const state = (await emu.control('GET', '/state')) as EmulatorState;
  const codes = (has: boolean): string[] => state.members.filter((m) => (m.photo !== null) === has).map((m) => m.code).sort();
  return { withPhoto: codes(true), without: codes(false) };
}

/** A folder of real JPEGs named `<code>.jpg`, one per member, each different. */
async function photoFolder(codes: string[], seed: number): Promise<{ dir: string; files: Record<string, Buffer> }> {
  const files: Record<string, Buffer> = {};
  for (const [i, code] of codes.entries()) files[`${code}.jpg`] = await noisyJpeg(48, 48, seed + i);
  return { dir: await writeFiles(tempDir('wds-window-'), files), files };
}

function importPhotos(baseUrl: string, dir: string, env: NodeJS.ProcessEnv): Promise<CliRun> {
  const child = spawnCli(['photos', 'import', dir, '--json', '--no-trim', '--base-url', baseUrl, '--consumer-key', KEY, '--consumer-secret', SECRET], env);
  return finished(child);
}

describe('two imports at once through 127.0.0.1 and localhost', () => {
  const emu = useEmulator(WINDOW);

  it('share one update window: 4 update requests, 0 answered 429, every photo in place', async () => {
    const { withPhoto, without } = await membersByPhoto(emu());
    expect(withPhoto.length).toBeGreaterThanOrEqual(2);
    expect(without.length).toBeGreaterThanOrEqual(2);
    // Each import registers one photo and replaces one: two update requests each.
    const a = await photoFolder([without[0]!, withPhoto[0]!], 100);
    const b = await photoFolder([without[1]!, withPhoto[1]!], 200);
    await resetStats(emu());
    const port = new URL(emu().url).port;
    const env = { XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-shared-cache-')), WDS_CLIENT_LIMITS: CLIENT_WINDOW };

    const [runA, runB] = await Promise.all([
      importPhotos(`http://127.0.0.1:${port}`, a.dir, env),
      importPhotos(`http://localhost:${port}`, b.dir, env),
    ]);
    expect(runA.code, runA.stderr).toBe(0);
    expect(runB.code, runB.stderr).toBe(0);
    const s = await stats(emu());
    expect(s.update_requests).toBe(4);
    expect(s.rate_limited).toBe(0);
    const hashes = await photoHashes(emu());
    for (const { files } of [a, b]) {
      for (const [name, data] of Object.entries(files)) expect(hashes.get(name.replace('.jpg', ''))).toBe(sha256(data));
    }
    // Two of the four requests waited for the window to free a slot, and the summaries say so.
    const waited = [runA, runB].map((run) => (JSON.parse(run.stdout.trim()) as { waited_ms: number }).waited_ms);
    expect(Math.max(...waited)).toBeGreaterThanOrEqual(2000);
  }, 90_000);
});

describe('waited_ms of one import', () => {
  // One update request a minute: the import's second request waits for the first one's slot.
  const emu = useEmulator({ ...WINDOW, limits: { updatesPerMinute: 1 } });

  it('counts the wait on the client\'s own update window', async () => {
    const { withPhoto, without } = await membersByPhoto(emu());
    const folder = await photoFolder([without[0]!, withPhoto[0]!], 300);
    await resetStats(emu());
    const env = { XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-wait-cache-')), WDS_CLIENT_LIMITS: 'update=1/7s' };
    const started = Date.now();
    const run = await importPhotos(emu().url, folder.dir, env);
    const took = Date.now() - started;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/waiting \d+\.\d s: 1 update requests per 7 s reached/);
    const summary = JSON.parse(run.stdout.trim()) as { waited_ms: number };
    expect(summary.waited_ms).toBeGreaterThanOrEqual(3000);
    // A wait is never counted longer than the run lasted.
    expect(summary.waited_ms).toBeLessThanOrEqual(took);
    const s = await stats(emu());
    expect(s.update_requests).toBe(2);
    expect(s.rate_limited).toBe(0);
  }, 90_000);
});
