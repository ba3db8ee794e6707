/**
 * An archive run never reads or writes through a link (DESIGN.md section 8): a folder of the
 * previous snapshot replaced by a link to files outside the archive is not linked from; its files
 * are downloaded again, and the outside files keep their bytes and their single name. A folder of a
 * stopped run's `.partial` that became a link is not written through either: the run stops. And
 * `archive forget` takes the archive's lock: while a run holds it, forget refuses (exit 1) naming
 * the lock, and removes nothing.
 */
import { cp, mkdir, readdir, readFile, rename, stat, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { acquireTargetLock, lockFileOf } from '../../src/util/target-lock.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { archiveRun, manifestOf, resetStats, storageDownloads } from './helpers.js';

const emu = useEmulator({ generate: { members: 30, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 10_000] } });
const api = useClient(emu);

describe('archive safety', () => {
  it('a folder of the previous snapshot that is a link is not linked through; its files are downloaded', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = (await archiveRun(api(), archive)).snapshot!;
    const outside = join(tempDir('wds-outside-'), 'contracts');
    const folder = join(first.path, 'attachments', '1');
    await cp(folder, outside, { recursive: true });
    await rename(folder, `${folder}-gone`);
    await symlink(outside, folder);
    const through = [...(await manifestOf(first.path)).values()].filter((l) => l.path.startsWith('attachments/1/'));
    expect(through.length).toBeGreaterThan(0);

    await resetStats(emu());
    const second = (await archiveRun(api(), archive)).snapshot!;
    expect(await storageDownloads(emu())).toBe(through.length);
    expect(second.complete).toBe(true);
    // Unchanged on the service, but new bytes on disk: the snapshot counts them repaired.
    expect(second.counts).toMatchObject({ unchanged: second.counts.files - through.length, repaired: through.length, new: 0, changed: 0 });
    expect(second.bytes.new).toBe(through.reduce((sum, line) => sum + line.size, 0));
    expect((await verifyExport(second.path)).problems).toEqual([]);
    for (const line of through) {
      const file = join(outside, line.path.slice('attachments/1/'.length));
      expect((await stat(file)).nlink, file).toBe(1);
      expect((await stat(join(second.path, line.path))).nlink, line.path).toBe(1);
    }
  });

  it('a folder of a stopped run\'s .partial that is a link is not written through: the run fails naming it', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = (await archiveRun(api(), archive)).snapshot!;
    const line = [...(await manifestOf(first.path)).values()][0]!;
    const memberFolder = dirname(line.path);
    // What a stopped run could leave: its .partial, where a member's folder has become a link.
    const partial = join(archive, 'snapshots', `${first.id}-2.partial`);
    await mkdir(join(partial, dirname(memberFolder)), { recursive: true });
    const outside = tempDir('wds-outside-');
    await symlink(outside, join(partial, memberFolder));

    await expect(archiveRun(api(), archive)).rejects.toThrow(`${memberFolder} is a link; a snapshot does not write through links`);
    expect(await readdir(outside)).toEqual([]);
    expect((await stat(join(first.path, line.path))).nlink).toBe(1);
  });

  it('forget refuses while a run holds the archive, naming the lock, and removes nothing', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    await archiveRun(api(), archive);
    await archiveRun(api(), archive);
    const before = await readdir(join(archive, 'snapshots'));
    const lock = await acquireTargetLock(lockFileOf(archive, 'folder'), { command: 'wds-files run pipelines/nightly.yaml' });
    try {
      const refused = await runCli(['archive', 'forget', archive, '--keep-last', '1']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('wds-files run pipelines/nightly.yaml');
      expect(refused.stderr).toContain(join(archive, '.wds-lock'));
      expect(await readdir(join(archive, 'snapshots'))).toEqual(before);
    } finally {
      await lock.release();
    }
    expect(JSON.parse(await readFile(join(archive, 'snapshots', before[1]!, 'snapshot.json'), 'utf8')).complete).toBe(true);
  });
});
