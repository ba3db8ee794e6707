/**
 * `archive restore` and `archive forget` at once, as real processes: a restore stopped (SIGSTOP)
 * once it has begun, a forget whose rules would remove the snapshot it reads, then the restore
 * continued. The forget keeps the snapshot and says why; the restore completes with every file
 * right; the next forget removes it. Then the marks themselves: a restore that finds a removal
 * under way waits for it, and refuses a snapshot it took away.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { markReading, markRemoving, SnapshotRemovedError } from '../../src/archive/readers.js';
import { archiveRun, changeAttachments, filesIn, manifestOf } from './helpers.js';

/** Some 18 MB in a snapshot: the restore is still copying when it is stopped. */
const emu = useEmulator({ generate: { members: 40, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [400_000, 500_000] } });
const api = useClient(emu);

describe('archive restore while archive forget runs', () => {
  it('forget keeps the snapshot being read, the restore completes with every file right, the next forget removes it', async () => {
    const archive = join(tempDir('wds-restore-forget-'), 'archive');
    const first = (await archiveRun(api(), archive)).snapshot!.id;
    await changeAttachments(emu(), 40);
    const second = (await archiveRun(api(), archive)).snapshot!.id;
    const firstDir = join(archive, 'snapshots', first);
    const lines = [...(await manifestOf(firstDir)).values()];
    const out = join(tempDir('wds-restore-out-'), 'restored');

    const restore = spawnCli(['archive', 'restore', archive, `@${first}`, '--out', out]);
    const ended = finished(restore);
    // Stopped as soon as its output folder is there, before it has copied every file.
    for (let i = 0; i < 20_000 && !existsSync(out); i += 1) await sleep(2);
    restore.kill('SIGSTOP');
    try {
      expect(existsSync(out), 'the restore made its output folder').toBe(true);
      expect((await filesIn(out)).length).toBeLessThan(lines.length);

      const forget = await runCli(['archive', 'forget', archive, '--keep-last', '1', '--json']);
      expect(forget.code, forget.stdout + forget.stderr).toBe(0);
      const said = JSON.parse(forget.stdout);
      expect(said.remove).toEqual([]);
      expect(said.busy).toEqual([first]);
      expect(said.keep.find((k: { id: string }) => k.id === first).reasons[0]).toMatch(new RegExp(`^being read \\(pid ${restore.pid} on .*\\); the next forget removes it$`));
      expect(existsSync(firstDir)).toBe(true);
      const text = await runCli(['archive', 'forget', archive, '--keep-last', '1']);
      expect(text.stdout).toContain('keep 2, removed 0 (1 kept while being read)');
      expect(text.stdout).toContain(`keep    ${first}  being read (pid ${restore.pid} on `);
    } finally {
      restore.kill('SIGCONT');
    }
    const run = await ended;
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const verified = await verifyExport(out);
    expect(verified.problems).toEqual([]);
    expect(verified.files).toBe(lines.length);
    for (const line of lines) expect((await readFile(join(out, line.path))).equals(await readFile(join(firstDir, line.path))), line.path).toBe(true);
    expect(existsSync(join(archive, '.wds-readers'))).toBe(false);

    const again = await runCli(['archive', 'forget', archive, '--keep-last', '1', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).remove.map((r: { id: string }) => r.id)).toEqual([first]);
    expect(await readdir(join(archive, 'snapshots'))).toEqual([second]);
  }, 180_000);

  it('a restore waits for a removal under way, and refuses the snapshot it took away', async () => {
    const archive = tempDir('wds-readers-');
    const id = '2026-03-01T040000';
    const dir = join(archive, 'snapshots', id);
    await mkdir(dir, { recursive: true });
    const { readers, mark } = await markRemoving(archive, id);
    expect(readers).toEqual([]);
    // Still there when the removal is withdrawn: the restore reads it.
    const reading = markReading(archive, id, dir, 10_000);
    await sleep(300);
    await mark!.release();
    const held = await reading;
    expect(held).not.toBeNull();
    // A removal announced now finds the reader and keeps the snapshot.
    const second = await markRemoving(archive, id);
    expect(second.mark).toBeNull();
    expect(second.readers.map((r) => r.pid)).toEqual([process.pid]);
    await held!.release();

    const third = await markRemoving(archive, id);
    const late = markReading(archive, id, dir, 10_000);
    await sleep(300);
    await rm(dir, { recursive: true });
    await third.mark!.release();
    await expect(late).rejects.toThrow(SnapshotRemovedError);
    await expect(markReading(archive, id, dir, 10_000)).rejects.toThrow(`snapshot ${id} was removed`);
    expect(existsSync(join(archive, '.wds-readers'))).toBe(false);
  });
});
