/**
 * The shipped pipelines on a fresh clone (a copy of the repository's pipelines/ and samples/, no
 * out/): each runs as the CLI's child process and exits 0, the drop folder's inbox, done and
 * refused folders made by the first run; and `plan` counts a drop folder's photos as the run then
 * treats them (the extension list, two files for one member, an unknown member, the bytes).
 */
import { cp, readdir, utimes, writeFile, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { ROOT, finished, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

/** A fresh clone's tracked pipelines and samples (out/ is ignored by git, so a clone has none). */
async function freshClone(): Promise<string> {
  const root = tempDir('wds-fresh-clone-');
  await cp(join(ROOT, 'pipelines'), join(root, 'pipelines'), { recursive: true });
  await cp(join(ROOT, 'samples'), join(root, 'samples'), { recursive: true });
  return root;
}

function cli(root: string, args: string[]): Promise<CliRun> {
  return finished(spawnCli(args, { WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET, WDS_NOTIFY_URL: 'http://127.0.0.1:9/none' }, root));
}

const names = async (dir: string): Promise<string[]> => (await readdir(dir)).sort();

describe('the shipped pipelines on a fresh clone', () => {
  it('photo-dropbox: validate says ok, the first run makes the drop folder and exits 0, and plan counts what the next run sends and refuses', async () => {
    const root = await freshClone();
    const file = 'pipelines/photo-dropbox.yaml';
    const drop = join(root, 'out', 'dropbox');
    expect((await cli(root, ['validate', file])).code).toBe(0);

    // No inbox yet: the plan reads nothing and makes nothing; the run makes the three folders.
    const empty = await cli(root, ['plan', file, '--json']);
    expect(empty.code, empty.stderr).toBe(0);
    expect(JSON.parse(empty.stdout).files).toMatchObject({ total: 0, transfer: 0 });
    expect(await readdir(root)).not.toContain('out');
    const first = await cli(root, ['run', file]);
    expect(first.code, first.stderr).toBe(0);
    expect(await names(drop)).toEqual(['done', 'inbox', 'refused']);

    // Seven files: three photos that go, a text file, a second photo of A0001 (both refused),
    // a photo of no member (it waits) and a .jpg holding text.
    const photos = join(root, 'samples', 'company', 'photos');
    const inbox = join(drop, 'inbox');
    for (const code of ['A0001', 'A0002', 'A0003']) await copyFile(join(photos, `${code}.jpg`), join(inbox, `${code}.jpg`));
    await copyFile(join(photos, 'A0006.jpg'), join(inbox, 'A0001.png'));
    await copyFile(join(photos, 'A0004.jpg'), join(inbox, 'Z9999.jpg'));
    await writeFile(join(inbox, 'A0005.jpg'), 'not a photo\n');
    await writeFile(join(inbox, 'notes.txt'), 'hello\n');
    // Older than the drop folder's 10 seconds, so that the run takes them now.
    const past = new Date(Date.now() - 60_000);
    for (const name of await readdir(inbox)) await utimes(join(inbox, name), past, past);

    const planned = await cli(root, ['plan', file, '--json']);
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as { files: { total: number; transfer: number; refused: number }; requests: { update: number } };
    const ran = await cli(root, ['run', file, '--json']);
    expect(ran.code, ran.stderr).toBe(3);
    const summary = JSON.parse(ran.stdout) as { counts: Record<'ok' | 'converted' | 'invalid' | 'conflict', number>; moved: { done: number; refused: number } };
    expect(summary.counts).toMatchObject({ ok: 2, invalid: 3, conflict: 2 });
    expect(plan.files).toMatchObject({ total: 7, transfer: summary.counts.ok + summary.counts.converted, refused: summary.counts.invalid + summary.counts.conflict });
    expect(plan.requests.update).toBe(1);
    // The photo of no member waits in the inbox for its member's registration (the pipeline runs on member_created).
    expect(summary.moved).toMatchObject({ done: 2, refused: 4, left: 1 });
    expect(await names(join(drop, 'done'))).toEqual(['A0002.jpg', 'A0003.jpg']);
    expect(await names(inbox)).toEqual(['Z9999.jpg']);
  }, 180_000);

  it('nightly-attachments and photos-to-zip: a first run on a fresh clone exits 0', async () => {
    const root = await freshClone();
    for (const file of ['pipelines/nightly-attachments.yaml', 'pipelines/photos-to-zip.yaml']) {
      const ran = await cli(root, ['run', file]);
      expect(ran.code, `${file}: ${ran.stderr}`).toBe(0);
    }
    expect(await names(join(root, 'out'))).toEqual(['archive', 'backups']);
    expect(await names(join(root, 'out', 'backups'))).toEqual(['photos.zip']);
  }, 120_000);
});
