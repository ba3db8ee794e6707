/**
 * Where the file system refuses hard links (link() answers EPERM, as FAT and exFAT do), unchanged
 * files are copied from the previous snapshot, and the report and snapshot.json say so. The
 * refusal is real: the first snapshot's files are made immutable (chattr +i, which needs root),
 * and the kernel then refuses to link them. Skipped, saying why, where that cannot be done.
 */
import { execFileSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { archiveRun, inodesOf, resetStats, snapshotJson, storageDownloads } from './helpers.js';

const emu = useEmulator({ generate: { members: 20, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 10_000] } });
const api = useClient(emu);

function chattr(flag: '+i' | '-i', dir: string): boolean {
  try {
    execFileSync('chattr', ['-R', flag, dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const canMakeImmutable = ((): boolean => {
  if (process.getuid?.() !== 0) return false;
  const probe = tempDir('wds-chattr-');
  const ok = chattr('+i', probe);
  chattr('-i', probe);
  return ok;
})();

const immutable: string[] = [];
afterAll(() => {
  for (const dir of immutable) chattr('-i', dir);
});

describe.skipIf(!canMakeImmutable)('an archive where hard links are refused (needs root and chattr)', () => {
  it('copies the unchanged files, downloads none of them, and says so', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = (await archiveRun(api(), archive)).snapshot!;
    const files = (await readdir(join(first.path, 'attachments'), { recursive: true })).length;
    expect(files).toBeGreaterThan(0);
    immutable.push(join(first.path, 'attachments'));
    expect(chattr('+i', join(first.path, 'attachments'))).toBe(true);

    await resetStats(emu());
    const second = await archiveRun(api(), archive);
    const snap = second.snapshot!;
    expect(await storageDownloads(emu())).toBe(0);
    expect(snap.complete).toBe(true);
    expect(snap.counts).toMatchObject({ unchanged: first.counts.files, new: 0, changed: 0 });
    // Copies take their space again.
    expect(snap.bytes.new).toBe(snap.bytes.total);
    expect(second.report.notes).toContain('this file system has no hard links: unchanged files were copied from the previous snapshot, and take their space again');
    expect((await snapshotJson(snap.path)).unchanged_files).toBe('copies');
    const [a, b] = [await inodesOf(first.path), await inodesOf(snap.path)];
    for (const [key, ino] of b) expect(ino, key).not.toBe(a.get(key));
    expect((await verifyExport(snap.path)).problems).toEqual([]);
    expect(second.report.items.every((i) => i.reason?.includes('copied from it'))).toBe(true);
  });
});
