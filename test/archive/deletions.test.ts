/**
 * A listing that suddenly holds far fewer files than the last snapshot, as `wds-files run` meets
 * it: the CLI as a child process, the emulator over HTTP. Every member holding files deleted
 * empties the attachments listing; the run keeps its snapshot out of `latest` and out of
 * retention (keep_last 1 removes nothing), exits 3 and says why, and so does the next run, which
 * counts from the last snapshot not held back. `--allow-deletions` lets the deletions through.
 */
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { pipelineSchema } from '../../src/pipeline-files/schema.js';
import { companyOf } from '../helpers/fixtures.js';
import { snapshotJson } from './helpers.js';

const emu = useEmulator({ generate: { members: 20, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 6000] } });

it('a listing emptied keeps latest where it was until the run is told --allow-deletions', async () => {
  const dir = tempDir('wds-archive-deletions-');
  const archive = join(dir, 'archive');
  const file = join(dir, 'nightly.yaml');
  await writeFile(file, `name: nightly\nfrom: { service: attachments }\nto: { archive: ${archive} }\nretention: { keep_last: 1 }\n`);
  const env = { WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
  const latest = async (): Promise<string> => (await readFile(join(archive, 'latest'), 'utf8')).trim();

  const first = await runCli(['run', file, '--json'], env);
  expect(first.code, first.stderr).toBe(0);
  const firstId = (JSON.parse(first.stdout) as { snapshot: string }).snapshot;
  const files = (await snapshotJson(join(archive, 'snapshots', firstId))).counts.files as number;
  expect(files).toBeGreaterThan(20);

  // Every member goes, with its files: the service lists none.
  const codes = Object.keys(companyOf(emu()).data.members);
  const { status, body } = await emu().api('POST', '/members/delete', { codes });
  expect(status).toBe(200);
  expect((await emu().waitTask(body.task_id)).status).toBe('OK');

  const emptied = await runCli(['run', file, '--json'], env);
  expect(emptied.code, emptied.stdout + emptied.stderr).toBe(3);
  const summary = JSON.parse(emptied.stdout) as { status: string; snapshot: string; held: string; removed: string[] };
  expect(summary.status).toBe('partial');
  expect(summary.held).toBe(`${files} of the ${files} files of snapshot ${firstId} are not listed any more, more than max_delete 50% allows`);
  expect(summary.removed).toEqual([]);
  expect(await latest()).toBe(firstId);
  const held = await snapshotJson(join(archive, 'snapshots', summary.snapshot));
  expect(held).toMatchObject({ complete: true, held: summary.held, counts: { files: 0, deleted: files } });
  expect((await verifyExport(join(archive, 'snapshots', firstId))).files).toBe(files);

  const list = await runCli(['archive', 'list', archive]);
  expect(list.stdout).toMatch(new RegExp(`${firstId}\\s+yes\\s+${files}\\s.*\\(latest\\)`));
  expect(list.stdout).toMatch(new RegExp(`${summary.snapshot}\\s+held\\s+0\\s`));

  // The next night counts from the last snapshot not held back: held back again.
  const again = await runCli(['run', file], env);
  expect(again.code, again.stdout + again.stderr).toBe(3);
  expect(again.stdout).toMatch(/snapshot \S+ \(held back\): 0 files, 0 new, 0 changed, 0 unchanged, \d+ deleted/);
  expect(again.stdout).toContain(`held back: ${files} of the ${files} files of snapshot ${firstId} are not listed any more`);
  expect(again.stdout).toContain('run again with --allow-deletions');
  expect(await latest()).toBe(firstId);
  expect((await readdir(join(archive, 'snapshots'))).length).toBe(3);

  const allowed = await runCli(['run', file, '--json', '--allow-deletions'], env);
  expect(allowed.code, allowed.stdout + allowed.stderr).toBe(0);
  const accepted = JSON.parse(allowed.stdout) as { status: string; snapshot: string; held?: string; removed: string[] };
  expect(accepted.status).toBe('ok');
  expect(accepted.held).toBeUndefined();
  expect(await latest()).toBe(accepted.snapshot);
  expect((await snapshotJson(join(archive, 'snapshots', accepted.snapshot))).counts).toMatchObject({ files: 0, deleted: files });
  // Retention now goes by it: the first snapshot and the two held back are superseded.
  expect(accepted.removed).toHaveLength(3);
  expect(await readdir(join(archive, 'snapshots'))).toEqual([accepted.snapshot]);
}, 180_000);

it('max_delete is a count of files or a share from 0% to 100%', () => {
  const to = (max: unknown) => pipelineSchema.safeParse({ name: 'n', from: { service: 'photos' }, to: { archive: 'a', max_delete: max } }).success;
  expect([to(0), to(25), to('0%'), to('50%'), to('100%')]).toEqual([true, true, true, true, true]);
  expect([to(-1), to(1.5), to('101%'), to('half'), to('50')]).toEqual([false, false, false, false, false]);
});
