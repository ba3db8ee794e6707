/**
 * A snapshot archive that notices a changed file and repairs it, as a user meets it: the CLI as a
 * child process against the emulator in-process. Snapshot files are read-only; a byte overwritten
 * in place (write bits put back first, its modification time put back after, as a careless editor
 * or an attacker would) is named by plain `archive check`, not linked into the next snapshot, and
 * `archive repair` puts the service's bytes back in the older snapshot. What `check --read-data`
 * finds damaged the next run does not link either. The archive's own links and removals (a run,
 * forget) are never taken for a change.
 */
import { createHash } from 'node:crypto';
import { chmod, open, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { changeAttachments, fileId, manifestOf } from './helpers.js';

const emu = useEmulator({ generate: { members: 20, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 10_000] } });

/** A pipeline archiving the company's attachments into `<dir>/archive`. */
async function pipeline(dir: string): Promise<string> {
  const file = join(dir, 'nightly.yaml');
  await writeFile(file, [
    'name: nightly',
    `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
    'from: { service: attachments }',
    'to: { archive: ./archive }',
    '',
  ].join('\n'));
  return file;
}

async function run(file: string): Promise<{ id: string; counts: Record<string, number>; stdout: string }> {
  const result = await runCli(['run', file]);
  expect(result.code, result.stdout + result.stderr).toBe(0);
  const id = (await readFile(join(file, '..', 'archive', 'latest'), 'utf8')).trim();
  const doc = JSON.parse(await readFile(join(file, '..', 'archive', 'snapshots', id, 'snapshot.json'), 'utf8'));
  return { id, counts: doc.counts, stdout: result.stdout + result.stderr };
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Flips the first byte of `path` in place, its write bits put back first and its times after. */
async function overwriteByte(path: string): Promise<void> {
  const before = await stat(path);
  await chmod(path, 0o644);
  const handle = await open(path, 'r+');
  const first = Buffer.alloc(1);
  await handle.read(first, 0, 1, 0);
  await handle.write(Buffer.from([first[0]! ^ 0xff]), 0, 1, 0);
  await handle.close();
  await chmod(path, 0o444);
  await utimes(path, before.atime, before.mtime); // as `touch -r` would
}

describe('a byte changed in a snapshot', () => {
  it('plain check names it (exit 3), the next snapshot holds the service\'s bytes, repair restores the older snapshot\'s copy', async () => {
    const dir = tempDir('wds-archive-integrity-');
    const file = await pipeline(dir);
    const archive = join(dir, 'archive');
    const first = await run(file);
    const firstDir = join(archive, 'snapshots', first.id);
    const lines = [...(await manifestOf(firstDir)).values()];
    // One file changes at the service: its damaged copy cannot be fetched again as it was.
    const [staleId] = await changeAttachments(emu(), 1);
    const stale = lines.find((l) => fileId(l) === staleId)!;
    const victim = lines.find((l) => fileId(l) !== staleId)!;
    const victimPath = join(firstDir, victim.path);
    const good = await readFile(victimPath);
    expect(sha256(good)).toBe(victim.sha256);
    // Written read-only: no write bits, for files, manifest and snapshot.json alike.
    for (const path of [victimPath, join(firstDir, 'manifest.jsonl'), join(firstDir, 'snapshot.json')]) expect((await stat(path)).mode & 0o222, path).toBe(0);

    // Past the leeway a change time is given around the run's own writes.
    await sleep(2500);
    await overwriteByte(victimPath);
    await overwriteByte(join(firstDir, stale.path));

    const check = await runCli(['archive', 'check', archive]);
    expect(check.code, check.stdout + check.stderr).toBe(3);
    expect(check.stdout).toContain(`${first.id} ${victim.path}: changed at`);
    expect(check.stdout).toContain(`${first.id} ${stale.path}: changed at`);

    // The next run downloads the victim again rather than linking the changed inode forward.
    const second = await run(file);
    const secondDir = join(archive, 'snapshots', second.id);
    expect(await readFile(join(secondDir, victim.path))).toEqual(good);
    expect((await stat(join(secondDir, victim.path))).ino).not.toBe((await stat(victimPath)).ino);
    expect(second.counts).toMatchObject({ files: lines.length, changed: 1, repaired: 1, unchanged: lines.length - 2, new: 0 });
    expect(second.stdout).toContain('1 repaired');
    expect(second.stdout).toContain(victim.path);

    // The older snapshot still holds both damaged copies; repair fetches the victim's, names the other.
    const repair = await runCli(['archive', 'repair', archive, ...connectionArgs(emu())]);
    expect(repair.code, repair.stdout + repair.stderr).toBe(3);
    expect(repair.stdout).toContain(`${first.id} ${stale.path}: the service holds a newer version`);
    expect(repair.stdout).toContain(`repaired ${first.id} ${victim.path}`);
    expect(await readFile(victimPath)).toEqual(good);
    expect((await stat(victimPath)).mode & 0o222).toBe(0);

    const after = await runCli(['archive', 'check', archive]);
    expect(after.code).toBe(3);
    expect(after.stdout).toContain(`${first.id} ${stale.path}: changed at`);
    expect(after.stdout).not.toContain(victim.path);
    expect(after.stdout).toContain('1 problem:');
  }, 90_000);

  it('a file check --read-data found damaged is not linked into the next snapshot', async () => {
    const dir = tempDir('wds-archive-read-data-');
    const file = await pipeline(dir);
    const archive = join(dir, 'archive');
    const first = await run(file);
    const firstDir = join(archive, 'snapshots', first.id);
    const victim = [...(await manifestOf(firstDir)).values()][0]!;
    const victimPath = join(firstDir, victim.path);
    const good = await readFile(victimPath);
    // An archive with no record of its writes (as one made before it was kept) is judged by
    // sizes and, with --read-data, by its bytes alone: the change time says nothing there.
    await rm(join(archive, '.wds-writes'), { recursive: true });
    await overwriteByte(victimPath);
    const plain = await runCli(['archive', 'check', archive]);
    expect(plain.code, plain.stdout).toBe(0);
    expect(plain.stdout).toContain('change times not compared');

    const data = await runCli(['archive', 'check', archive, '--read-data', '100']);
    expect(data.code, data.stdout + data.stderr).toBe(3);
    expect(data.stdout).toContain(`${first.id} ${victim.path}: sha256 differs from the manifest`);
    // Plain check remembers it.
    expect((await runCli(['archive', 'check', archive])).stdout).toContain(`${first.id} ${victim.path}: sha256 differs from the manifest (found by archive check --read-data`);

    const second = await run(file);
    const secondDir = join(archive, 'snapshots', second.id);
    expect(await readFile(join(secondDir, victim.path))).toEqual(good);
    expect(second.counts).toMatchObject({ repaired: 1, changed: 0, unchanged: second.counts.files! - 1 });

    const repair = await runCli(['archive', 'repair', archive, ...connectionArgs(emu())]);
    expect(repair.code, repair.stdout + repair.stderr).toBe(0);
    expect(await readFile(victimPath)).toEqual(good);
    const after = await runCli(['archive', 'check', archive, '--read-data', '100']);
    expect(after.code, after.stdout).toBe(0);
    expect(after.stdout).toContain('no problem found');

    // forget removes a link of each file the later snapshot shares, which moves its change time:
    // inside forget's own window, so no file is taken for changed.
    await sleep(2500);
    expect((await runCli(['archive', 'forget', archive, '--keep-last', '1'])).code).toBe(0);
    await sleep(2500);
    const kept = await runCli(['archive', 'check', archive]);
    expect(kept.code, kept.stdout).toBe(0);
    expect(kept.stdout).toContain('1 snapshots');
    expect(kept.stdout).toContain('no problem found');
  }, 90_000);
});
