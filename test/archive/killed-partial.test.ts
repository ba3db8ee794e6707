/**
 * An archive pipeline run by the CLI and SIGKILLed while its changed files download (DESIGN.md
 * section 8: a manifest that lists exactly the files present): the `.partial` it leaves holds no
 * file its manifest does not list, the unchanged files taken over from the previous snapshot
 * included, and the next run continues it, downloading only the changed files it lacks.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { changeAttachments, fileId, filesIn, manifestOf, resetStats, storageDownloads } from './helpers.js';

const emu = useEmulator({ generate: { members: 60, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 20_000] } });

afterEach(async () => {
  await emu().control('DELETE', '/faults');
});

it('SIGKILL mid-snapshot leaves a .partial whose manifest lists exactly its files; the next run downloads only the changed files it lacks', async () => {
  const folder = tempDir('wds-killed-archive-');
  const file = join(folder, 'nightly.yaml');
  await writeFile(file, 'name: nightly\nfrom: { service: attachments }\nto: { archive: archive }\n');
  const env = { WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
  const first = await runCli(['run', file, '--json'], env);
  expect(first.code, first.stderr).toBe(0);
  const firstId = (JSON.parse(first.stdout) as { snapshot: string }).snapshot;
  const all = (await manifestOf(join(folder, 'archive', 'snapshots', firstId))).size;

  const changed = await changeAttachments(emu(), 6);
  // Each changed file's download waits 5 s: the run is killed while they are all under way, once
  // the unchanged files have had a second to be taken over.
  await emu().control('POST', '/faults', { storage: { latency_ms: 5_000 } });
  await resetStats(emu());
  const child = spawnCli(['run', file], env);
  const done = finished(child);
  const deadline = Date.now() + 30_000;
  while ((await storageDownloads(emu())) === 0 && Date.now() < deadline) await sleep(50);
  await sleep(1_000);
  child.kill('SIGKILL');
  expect((await done).signal).toBe('SIGKILL');

  const snapshots = await readdir(join(folder, 'archive', 'snapshots'));
  const partialName = snapshots.find((name) => name.endsWith('.partial'))!;
  expect(partialName).toBeDefined();
  const partial = join(folder, 'archive', 'snapshots', partialName);
  const listed = [...(await manifestOf(partial)).values()];
  expect(await filesIn(partial)).toEqual(listed.map((line) => line.path).sort());
  // The unchanged files were taken over before the kill, and none of the changed ones landed.
  expect(listed.length).toBe(all - changed.length);
  expect(listed.filter((line) => changed.includes(fileId(line)))).toEqual([]);

  await emu().control('DELETE', '/faults');
  await resetStats(emu());
  const rerun = await runCli(['run', file, '--json'], env);
  expect(rerun.code, rerun.stderr).toBe(0);
  expect(await storageDownloads(emu())).toBe(changed.length);
  const snapshot = (JSON.parse(rerun.stdout) as { snapshot: string }).snapshot;
  expect(await readdir(join(folder, 'archive', 'snapshots'))).toEqual([firstId, snapshot].sort());
  const verified = await verifyExport(join(folder, 'archive', 'snapshots', snapshot));
  expect(verified.problems).toEqual([]);
  expect(verified.files).toBe(all);
}, 120_000);
