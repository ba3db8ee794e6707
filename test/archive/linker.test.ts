/**
 * The linking threads of an archive run (src/archive/linker.ts), on real folders: every unchanged
 * file lands as a hard link of the earlier one, on one thread or several; a file that is gone, of
 * another size, a link, or behind a folder that is a link is refused (and downloaded by the run);
 * a place in the new snapshot taken by a file stops the run naming it, with the files placed
 * before it handed back to be recorded; a stopped run starts nothing.
 */
import { lstat, mkdir, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/export.js';
import { Linker, type LinkItem } from '../../src/archive/linker.js';

/** An earlier snapshot of `members` members with one file each in each of two fields. */
async function earlierSnapshot(members: number): Promise<{ root: string; items: LinkItem[] }> {
  const root = tempDir('wds-linker-');
  const items: LinkItem[] = [];
  for (let m = 0; m < members; m += 1) {
    for (const field of [11, 12]) {
      const path = `attachments/1/${field}/M${m}/file-${m}.pdf`;
      await mkdir(dirname(join(root, path)), { recursive: true });
      const bytes = `member ${m} field ${field}`;
      await writeFile(join(root, path), bytes);
      items.push({ root, from: path, to: path, size: bytes.length });
    }
  }
  return { root, items };
}

async function linkAll(target: string, items: LinkItem[], threads: number, signal?: AbortSignal) {
  const linker = new Linker(target, threads);
  const placed: LinkItem[] = [];
  const refused: LinkItem[] = [];
  const run = linker.run(items, async (p, r) => {
    placed.push(...p);
    refused.push(...r);
  }, signal);
  return { run, placed, refused };
}

describe('the linking threads of an archive run', () => {
  it.each([1, 2])('link every unchanged file on %i thread(s), each sharing its inode with the earlier file', async (threads) => {
    const { root, items } = await earlierSnapshot(300);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    await mkdir(target);
    const { run, placed, refused } = await linkAll(target, items, threads);
    await run;
    expect(refused).toEqual([]);
    expect(placed.map((i) => i.to).sort()).toEqual(items.map((i) => i.to).sort());
    for (const item of items) {
      const [a, b] = await Promise.all([stat(join(root, item.from)), stat(join(target, item.to))]);
      expect(b.ino, item.to).toBe(a.ino);
    }
    expect((await readdir(join(target, 'attachments/1/11'))).length).toBe(300);
  });

  it('refuse a file that is gone, of another size, a link, or behind a folder that is a link, and make no folder for it', async () => {
    const { root, items } = await earlierSnapshot(4);
    const outside = tempDir('wds-linker-outside-');
    await writeFile(join(outside, 'secret.pdf'), 'outside');
    const [, gone, resized, linked, ...rest] = items;
    await rm(join(root, gone!.from));
    await writeFile(join(root, resized!.from), 'another size altogether');
    await rm(join(root, linked!.from));
    await symlink(join(outside, 'secret.pdf'), join(root, linked!.from));
    // The folder of the last member is replaced by a link to a folder outside the snapshot.
    const behind = rest.filter((i) => i.from.includes('/M3/'));
    for (const item of behind) {
      const folder = join(outside, item.from.split('/').slice(0, -1).join('-'));
      await mkdir(folder, { recursive: true });
      await writeFile(join(folder, item.from.split('/').at(-1)!), 'x'.repeat(item.size));
      await rm(dirname(join(root, item.from)), { recursive: true, force: true });
      await symlink(folder, dirname(join(root, item.from)));
    }
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    await mkdir(target);
    const { run, placed, refused } = await linkAll(target, items, 1);
    await run;
    const expectedRefused = [gone!, resized!, linked!, ...behind].map((i) => i.to).sort();
    expect(refused.map((i) => i.to).sort()).toEqual(expectedRefused);
    expect(placed.length).toBe(items.length - expectedRefused.length);
    for (const item of behind) await expect(lstat(dirname(join(target, item.to)))).rejects.toThrow(/ENOENT/);
  });

  it('stop at a file where the snapshot needs a folder, naming it, and hand back the files placed before it', async () => {
    const { items } = await earlierSnapshot(50);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    const blocked = join(target, 'attachments/1/11/M20');
    await mkdir(dirname(blocked), { recursive: true });
    await writeFile(blocked, 'a file an interrupted run left');
    const { run, placed } = await linkAll(target, items, 1);
    await expect(run).rejects.toThrow(`${blocked} is a file where the snapshot needs a folder`);
    const present = new Set<string>();
    for (const item of items) {
      if (await lstat(join(target, item.to)).then(() => true, () => false)) present.add(item.to);
    }
    expect(present.size).toBeGreaterThan(0);
    expect(new Set(placed.map((i) => i.to))).toEqual(present);
  });

  it('start nothing once stopped', async () => {
    const { items } = await earlierSnapshot(10);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    await mkdir(target);
    const stop = new AbortController();
    stop.abort('SIGINT');
    const { run, placed, refused } = await linkAll(target, items, 1, stop.signal);
    await run;
    expect([placed.length, refused.length]).toEqual([0, 0]);
    expect(await readdir(target)).toEqual([]);
  });
});
