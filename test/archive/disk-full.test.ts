/**
 * A nightly archive whose disk fills up while it downloads the changed files (DESIGN.md sections 8
 * and 10), run by the CLI on a real tmpfs: the run fails naming the archive and the cause, the
 * earlier snapshot and `latest` stay as they were, and the `.partial` it leaves has a manifest of
 * whole lines that lists exactly its files. Once there is room again, the next run continues that
 * `.partial`, downloads only the changed files it lacks, and its snapshot verifies. Mounting needs
 * root: elsewhere the test is skipped, saying why.
 */
import { readFile, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { isRoot, useTmpfs } from '../helpers/tmpfs.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { changeAttachments, fileId, filesIn, manifestOf, resetStats, storageDownloads } from './helpers.js';

/** About 9 MB of attachments in the first snapshot; the changed ones, 24 of 300 KB, need 7 MB more. */
const emu = useEmulator({ generate: { members: 40, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [200_000, 250_000] } });
const CHANGED = 24;
const CHANGED_BYTES = 300_000;
/** Room left for the second run: a few of its changed files, not all. */
const ROOM = 2 * 1024 * 1024;
const disk = useTmpfs('archive/disk-full.test', '32m');

it.skipIf(!isRoot)('a disk full mid-snapshot: exit 1 naming the archive and the cause, the earlier snapshot whole, a .partial of exactly its manifest; with room, the next run finishes it', async () => {
  const archive = join(disk(), 'archive');
  const file = join(tempDir('wds-archive-full-'), 'nightly.yaml');
  await writeFile(file, `name: nightly\nfrom: { service: attachments }\nto: { archive: ${archive} }\n`);
  const env = { WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
  const first = await runCli(['run', file, '--json'], env);
  expect(first.code, first.stderr).toBe(0);
  const firstId = (JSON.parse(first.stdout) as { snapshot: string }).snapshot;
  const firstDir = join(archive, 'snapshots', firstId);
  const all = (await manifestOf(firstDir)).size;

  const changed = await changeAttachments(emu(), CHANGED, undefined, CHANGED_BYTES);
  const { bavail, bsize } = await statfs(disk());
  const filler = join(disk(), 'filler');
  await writeFile(filler, Buffer.alloc(bavail * bsize - ROOM, 1));

  const full = await runCli(['run', file, '--json'], env);
  expect(full.code, full.stdout + full.stderr).toBe(1);
  const summary = JSON.parse(full.stdout) as { status: string; error: string };
  expect(summary.status).toBe('failed');
  expect(summary.error).toContain(`cannot write the export ${archive}`);
  expect(summary.error).toContain('the disk is full (ENOSPC');
  expect(full.stderr).not.toMatch(/closing file descriptor|Warning| {4}at /);

  // The earlier snapshot, and `latest` naming it, are as the first run left them.
  expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(firstId);
  const before = await verifyExport(firstDir);
  expect(before.problems).toEqual([]);
  expect(before.files).toBe(all);

  const partialName = (await readdir(join(archive, 'snapshots'))).find((name) => name.endsWith('.partial'));
  expect(partialName).toBeDefined();
  const partial = join(archive, 'snapshots', partialName!);
  const text = await readFile(join(partial, 'manifest.jsonl'), 'utf8');
  expect(text === '' || text.endsWith('\n'), 'the manifest ends with a whole line').toBe(true);
  for (const line of text.split('\n').slice(0, -1)) expect(() => JSON.parse(line), line).not.toThrow();
  const held = [...(await manifestOf(partial)).values()];
  expect(await filesIn(partial)).toEqual(held.map((line) => line.path).sort());
  // No half-written download is left behind, and not every changed file landed before the disk filled.
  expect(await readdir(join(partial, '.wds-tmp')).catch(() => [])).toEqual([]);
  const landed = held.filter((line) => changed.includes(fileId(line))).length;
  expect(landed).toBeLessThan(CHANGED);

  await rm(filler);
  await resetStats(emu());
  const rerun = await runCli(['run', file, '--json'], env);
  expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
  expect(await storageDownloads(emu())).toBe(CHANGED - landed);
  const snapshot = (JSON.parse(rerun.stdout) as { snapshot: string }).snapshot;
  expect(await readdir(join(archive, 'snapshots'))).toEqual([firstId, snapshot].sort());
  expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(snapshot);
  const after = await verifyExport(join(archive, 'snapshots', snapshot));
  expect(after.problems).toEqual([]);
  expect(after.files).toBe(all);
  expect((await verifyExport(firstDir)).problems).toEqual([]);
}, 120_000);
