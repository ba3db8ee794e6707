/**
 * A run killed (SIGKILL, the real CLI) while it compacts the import journal leaves the old journal
 * whole, and the next run reads it and acts on it: the request an earlier run left open is settled
 * by its task, the photos it applied are not sent again, and the one photo changed since is sent.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { journalLockOf } from '../../src/stages/import/journal/file.js';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, photoRequests, resetStats, sha256 } from '../import/photo-helpers.js';
import { generatedCodes, pause, photoFolder, runPlace } from '../import/journal-helpers.js';

const emu = useEmulator({
  generate: { members: 4, photo_ratio: 0, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] },
  limits: { updatesPerMinute: 10_000 },
});

/** Targets of other members the journal knows, each written twice: half the journal is not needed, so the next run compacts it. */
const OTHER_TARGETS = 2_000;

function padding(): string {
  const lines: string[] = [];
  for (let i = 0; i < OTHER_TARGETS; i += 1) {
    lines.push(JSON.stringify({ t: 'applied', target: `photo:X${String(i).padStart(6, '0')}`, sha256: sha256(Buffer.from(String(i))), at: '2026-03-01T04:00:00.000Z', updated_at: '2026-03-01 13:00:00' }));
  }
  return `${lines.join('\n')}\n`.repeat(2);
}

describe('a run killed while it compacts the import journal', () => {
  it('leaves the old journal byte for byte; the next run settles what was open, sends only the changed photo, and compacts', { timeout: 120_000 }, async () => {
    const codes = generatedCodes(4);
    const { dir, files } = await photoFolder(codes, 11);
    const place = runPlace();
    const first = await runCli(['photos', 'import', dir, '--no-trim', ...connectionArgs(emu())], place.env);
    expect(first.code, first.stdout + first.stderr).toBe(0);

    // The first run's answer to its request is as if lost: its end is not in the journal.
    const folder = join(place.stateHome, 'wds-files');
    const [name] = await readdir(folder);
    const path = join(folder, name!);
    const lines = (await readFile(path, 'utf8')).split('\n').filter(Boolean);
    expect(lines.map((l) => JSON.parse(l).t)).toEqual(['send', 'task', 'end', 'seen', 'seen', 'seen', 'seen']);
    const journal = padding() + lines.filter((l) => JSON.parse(l).t !== 'end').map((l) => `${l}\n`).join('');
    await writeFile(path, journal);
    // One photo changed since.
    const changed = (await photoFolder(['G000003'], 12)).files.get('G000003')!;
    await writeFile(join(dir, 'G000003.jpg'), changed);
    await resetStats(emu());

    // This test holds the journal's lock, as a run appending a line would for a moment: the run
    // writes its compacted journal, then waits for the lock to put it in place, and is killed there.
    const lock = journalLockOf(path);
    await writeFile(lock, `${process.pid} ${hostname()} this-test 0\n`);
    const child = spawnCli(['photos', 'import', dir, '--no-trim', ...connectionArgs(emu())], place.env);
    const ended = finished(child);
    while (!(await readdir(folder)).some((n) => n.includes('.compacting-')) && child.exitCode === null) await pause(20);
    child.kill('SIGKILL');
    const killed = await ended;
    await rm(lock);
    expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL');
    // Killed mid-compaction: its temporary file is there, the journal as it was, nothing sent.
    expect((await readdir(folder)).some((n) => n.includes('.compacting-'))).toBe(true);
    expect(await readFile(path, 'utf8')).toBe(journal);
    expect(await photoRequests(emu())).toMatchObject({ register: 0, update: 0 });

    const report = join(tempDir(), 'report.json');
    const rerun = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())], place.env);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    const { items, notes } = JSON.parse(await readFile(report, 'utf8')) as { items: { code: string; outcome: string }[]; notes: string[] };
    expect(Object.fromEntries(items.map((i) => [i.code, i.outcome]))).toEqual({ G000001: 'skipped', G000002: 'skipped', G000003: 'ok', G000004: 'skipped' });
    expect(notes.join('\n')).toMatch(/sent by an earlier run .*: its task \d+ ended OK/);
    expect(await photoRequests(emu())).toMatchObject({ register: 0, update: 1 });
    const held = await photoHashes(emu());
    for (const code of codes) expect(held.get(code), code).toBe(sha256(code === 'G000003' ? changed : files.get(code)!));

    // Compacted this time: each target once, and no temporary file or lock left.
    expect((await readdir(folder)).filter((entry) => entry !== 'tokens')).toEqual([name]);
    const after = (await readFile(path, 'utf8')).split('\n').filter(Boolean);
    expect(after.length).toBeLessThan(OTHER_TARGETS + 20);
    expect(after.length).toBeGreaterThanOrEqual(OTHER_TARGETS + 4);
  });
});
