/**
 * A CSV that names one photo on every one of its many lines, `photos import x.csv --dry-run` as a
 * child process: every line is a conflict for the one member, found in time and memory that grow
 * with the lines (not with their square), and SIGTERM while the names are read stops the run at
 * once, as it stops every other stage.
 */
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { ROOT, finished, spawnCli, stderrMatching } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const emu = useEmulator({ seed: 'samples/company' });

async function csvOfOnePhoto(lines: number): Promise<string> {
  const dir = tempDir('wds-csv-lines-');
  await copyFile(join(ROOT, 'samples', 'company', 'photos', 'A0001.jpg'), join(dir, 'photo.jpg'));
  const csv = join(dir, 'x.csv');
  await writeFile(csv, 'A0001,photo.jpg\n'.repeat(lines));
  return csv;
}

const importArgs = (csv: string, ...more: string[]): string[] =>
  ['photos', 'import', csv, '--dry-run', '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET, ...more];

describe('a CSV of many lines naming one file', () => {
  it('200,000 lines: each a conflict for member A0001, well within a minute', async () => {
    const csv = await csvOfOnePhoto(200_000);
    const started = Date.now();
    const run = await finished(spawnCli(importArgs(csv, '--json', '-q')));
    const seconds = (Date.now() - started) / 1000;
    expect(run.code, run.stderr).toBe(3);
    const summary = JSON.parse(run.stdout) as { counts: Record<string, number> };
    expect(summary.counts).toMatchObject({ conflict: 200_000, ok: 0 });
    // Quadratic, 40,000 lines took 21 s and 200,000 would take hours; linear, a few seconds.
    expect(seconds).toBeLessThan(60);
  }, 120_000);

  it('SIGTERM while a 1,000,000-line CSV is read stops the run within seconds (not after every name), exit 143', async () => {
    const csv = await csvOfOnePhoto(1_000_000);
    const child = spawnCli(importArgs(csv, '-v'));
    const ended = finished(child);
    // The listings go out while the names are read; the names of a million lines take seconds more.
    await stderrMatching(child, /GET \S*face_image/, 60_000);
    const signalled = Date.now();
    child.kill('SIGTERM');
    const run = await ended;
    const seconds = (Date.now() - signalled) / 1000;
    expect(run.code, run.stderr.slice(-2000)).toBe(143);
    expect(run.stdout).toMatch(/interrupted|stopped/i);
    // The bound is 2 s when the machine is not loaded; doubled for a machine loaded more.
    expect(seconds, `stopped ${seconds} s after the signal`).toBeLessThan(4);
  }, 120_000);
});
