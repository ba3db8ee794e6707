/**
 * Nothing but an archive run writes inside a snapshot archive: an export, a restore or a pipeline
 * run whose output is a snapshot's folder, a zip in one, or any place under the archive is refused
 * before it makes anything there, and the snapshots keep their manifest and verify. A folder that
 * merely has a `snapshots/` folder of its own is no archive, and takes exports as before.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { KEY, SECRET } from '../helpers/emulator.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { archiveRun } from './helpers.js';

const emu = useEmulator({ generate: { members: 12, photo_ratio: 1, attachments_per_member: [1, 2], attachment_bytes: [3000, 10_000] } });
const api = useClient(emu);

describe('an output inside a snapshot archive', () => {
  it('is refused by export, restore and run before anything is made there; the snapshots stay as they were', async () => {
    const work = tempDir('wds-inside-archive-');
    const archive = join(work, 'archive');
    await archiveRun(api(), archive);
    await archiveRun(api(), archive);
    const ids = (await readdir(join(archive, 'snapshots'))).sort();
    const snapshot = join(archive, 'snapshots', ids[1]!);
    const manifest = await readFile(join(snapshot, 'manifest.jsonl'), 'utf8');
    const names = async (): Promise<string[]> => [...(await readdir(archive)), ...(await readdir(join(archive, 'snapshots'))), ...(await readdir(snapshot))].sort();
    const before = await names();

    const refusal = (out: string): string => `${out} is inside the snapshot archive ${archive}, which holds only what its runs write`;
    for (const [what, out] of [['attachments', snapshot], ['photos', join(snapshot, 'photos.zip')], ['photos', join(archive, 'photos')]] as const) {
      const run = await runCli([what, 'export', '--out', out, ...connectionArgs(emu())]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`--out ${refusal(out)}`);
    }
    // Another archive's snapshot restored into this one is refused too.
    const other = join(work, 'other');
    await archiveRun(api(), other);
    const restore = await runCli(['archive', 'restore', other, '--out', join(snapshot, 'restored')]);
    expect(restore.code).toBe(2);
    expect(restore.stderr).toContain(`--out ${refusal(join(snapshot, 'restored'))}`);

    const pipeline = join(work, 'into-snapshot.yaml');
    await writeFile(pipeline, `name: into-snapshot\nconnection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }\nfrom: { service: attachments }\nto: { folder: ${snapshot} }\n`);
    const run = await runCli(['run', pipeline]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`to.folder ${refusal(snapshot)}`);

    // The SDK refuses as the CLI does.
    await expect(runExport({ client: api(), what: 'photos', out: join(snapshot, 'sdk') })).rejects.toThrow(refusal(join(snapshot, 'sdk')));

    expect(await names()).toEqual(before);
    expect(await readFile(join(snapshot, 'manifest.jsonl'), 'utf8')).toBe(manifest);
    const verified = await verifyExport(snapshot);
    expect(verified.problems).toEqual([]);
  }, 60_000);

  it('is only a folder with snapshots in snapshots/, or with latest: a plain snapshots/ folder beside an export is none', async () => {
    const work = tempDir('wds-not-an-archive-');
    await mkdir(join(work, 'snapshots', 'holiday-2025'), { recursive: true });
    const out = join(work, 'photos');
    const run = await runCli(['photos', 'export', '--out', out, ...connectionArgs(emu())]);
    expect(run.code, run.stderr).toBe(0);
    expect((await verifyExport(out)).problems).toEqual([]);
  }, 60_000);
});
