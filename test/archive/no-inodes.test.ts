/**
 * An archive on a file system whose inodes run out while its bytes do not: tmpfs counts every
 * file, folder and hard link against its inodes. The run fails saying so, not "the disk is full",
 * and the earlier snapshot stays whole; the CLI, failing at its lock or its first folder, says the
 * same. Needs root to mount the tmpfs: elsewhere the tests are skipped, saying why.
 */
import { statfsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { isRoot, useTmpfs } from '../helpers/tmpfs.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { archiveRun } from './helpers.js';

const emu = useEmulator({ generate: { members: 60, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 6000] } });
const api = useClient(emu);
const disk = useTmpfs('no-inodes.test', '64m', 'nr_inodes=3000');

/** Takes all but `left` of the file system's free inodes, with empty files. */
async function takeInodes(left: number): Promise<void> {
  const filler = join(disk(), 'filler');
  await mkdir(filler, { recursive: true });
  const free = statfsSync(disk()).ffree;
  for (let i = 0; i < free - left; i += 1) await writeFile(join(filler, `${i}`), '');
}

describe.skipIf(!isRoot)('an archive on a file system out of inodes', () => {
  it('fails naming the inodes, leaves the earlier snapshot whole, and a CLI run on it says the same', async () => {
    const archive = join(disk(), 'archive');
    const first = (await archiveRun(api(), archive)).snapshot!;
    // The next snapshot needs an inode for each folder and link: fewer than its files are left.
    await takeInodes(20);
    await expect(archiveRun(api(), archive)).rejects.toThrow(/cannot write the export .*archive\/snapshots\/\S+\.partial: the file system is out of inodes \(\d+ of 3000 free; each file, folder and, on tmpfs, each hard link takes one\) \(ENOSPC/);
    expect((await verifyExport(first.path)).problems).toEqual([]);
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(first.id);

    await takeInodes(0);
    const file = join(tempDir('wds-no-inodes-'), 'archive.yaml');
    await writeFile(file, ['name: test-archive', 'from: { service: attachments }', `to: { archive: ${archive} }`, 'connection:', `  base_url: ${emu().url}`, `  consumer_key: ${KEY}`, `  consumer_secret: ${SECRET}`, ''].join('\n'));
    const run = await runCli(['run', file]);
    expect(run.code, run.stderr).toBe(1);
    // The lock, or the first folder after it, is where it fails.
    expect(run.stderr).toMatch(/the file system is out of inodes \(\d+ of 3000 free/);
    expect(run.stderr).not.toContain('the disk is full');
    expect(await readdir(join(archive, 'snapshots'))).toContain(first.id);
    expect((await verifyExport(first.path)).problems).toEqual([]);
  });
});
