/**
 * `archive forget` on a full disk, the one time it is needed, run by the CLI on a real tmpfs: the
 * archive's lock is taken although its holder's details cannot be written (the lock file is made,
 * empty, and filled in once there is room), the snapshot goes and its space is free again, and the
 * lock is gone afterwards. Mounting needs root: elsewhere the test is skipped, saying why.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { isRoot, useTmpfs } from '../helpers/tmpfs.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { TargetLockedError, acquireTargetLock } from '../../src/util/target-lock.js';
import { changeAttachments } from './helpers.js';

/** About 6 MB of attachments in a snapshot; the second snapshot changes every one, so the first's are its own. */
const emu = useEmulator({ generate: { members: 24, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [200_000, 250_000] } });
const disk = useTmpfs('archive/forget-full-disk.test', '24m');

it.skipIf(!isRoot)('forget on a full disk takes the lock, removes the snapshot and frees its space', async () => {
  const archive = join(disk(), 'archive');
  const file = join(tempDir('wds-forget-full-'), 'nightly.yaml');
  await writeFile(file, `name: nightly\nfrom: { service: attachments }\nto: { archive: ${archive} }\n`);
  const env = { WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
  const first = await runCli(['run', file, '--json'], env);
  expect(first.code, first.stderr).toBe(0);
  const firstId = (JSON.parse(first.stdout) as { snapshot: string }).snapshot;
  await changeAttachments(emu(), 24, undefined, 200_000);
  const second = await runCli(['run', file, '--json'], env);
  expect(second.code, second.stderr).toBe(0);
  const secondId = (JSON.parse(second.stdout) as { snapshot: string }).snapshot;

  // The disk filled to its last byte: not even a lock file's few bytes fit.
  const { bavail, bsize } = await statfs(disk());
  await writeFile(join(disk(), 'filler'), Buffer.alloc(bavail * bsize, 1));
  await expect(writeFile(join(disk(), 'probe'), 'x')).rejects.toThrow(/ENOSPC/);
  await rm(join(disk(), 'probe'), { force: true });
  expect((await statfs(disk())).bavail).toBe(0);

  const forget = await runCli(['archive', 'forget', archive, '--keep-last', '1', '--json']);
  expect(forget.code, forget.stdout + forget.stderr).toBe(0);
  expect(JSON.parse(forget.stdout).remove.map((r: { id: string }) => r.id)).toEqual([firstId]);
  expect(await readdir(join(archive, 'snapshots'))).toEqual([secondId]);
  // The first snapshot's own files, some 5 MB, are free again.
  expect((await statfs(disk())).bavail * bsize).toBeGreaterThan(4_000_000);
  expect(existsSync(join(archive, '.wds-lock'))).toBe(false);
  expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(secondId);
  expect((await verifyExport(join(archive, 'snapshots', secondId))).problems).toEqual([]);
  await rm(join(disk(), 'filler'));
}, 180_000);

it.skipIf(!isRoot)('a lock held empty on a full disk is busy for other runs, and gets its holder once there is room', async () => {
  const dir = join(disk(), 'locked');
  await mkdir(dir);
  const { bavail, bsize } = await statfs(disk());
  const filler = join(disk(), 'filler-2');
  await writeFile(filler, Buffer.alloc(bavail * bsize, 1));
  const file = join(dir, '.wds-lock');
  await expect(acquireTargetLock(file, { command: 'plain' })).rejects.toThrow(/ENOSPC/);
  expect(existsSync(file)).toBe(false);
  const lock = await acquireTargetLock(file, { command: 'archive forget', evenWhenFull: true });
  expect(await readFile(file, 'utf8')).toBe('');
  const other = await acquireTargetLock(file, { command: 'another run' }).catch((error: unknown) => error);
  expect(other).toBeInstanceOf(TargetLockedError);
  await rm(filler);
  await lock.assertHeld();
  expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: process.pid, command: 'archive forget', token: lock.holder.token });
  await lock.release();
  expect(existsSync(file)).toBe(false);
}, 60_000);
