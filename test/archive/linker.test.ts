/**
 * The linking threads of an archive run (src/archive/linker.ts), on real folders: every unchanged
 * file lands as a hard link of the earlier one, on one thread or several, or on the threads that
 * made its folders ahead (a part they did not see included); a file that is gone, of
 * another size, a link, or behind a folder that is a link is refused (and downloaded by the run);
 * a place in the new snapshot taken by a file stops the run naming it, with the files placed
 * before it handed back to be recorded; a stopped run starts nothing; a run whose thread dies
 * fails instead of hanging; when recording a batch fails, files linked but never recorded are
 * removed.
 */
import { lstat, mkdir, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
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

  it('place files ahead when asked, leaving a place already taken, and still stop at a file where a folder is needed', async () => {
    const { root, items } = await earlierSnapshot(50);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    const blocked = join(target, 'attachments/1/12/M20');
    await mkdir(dirname(blocked), { recursive: true });
    await writeFile(blocked, 'a file an interrupted run left');
    // A download got to this place before the thread did.
    const taken = items.find((i) => i.to.includes('/11/M7/'))!;
    await mkdir(dirname(join(target, taken.to)), { recursive: true });
    await writeFile(join(target, taken.to), 'downloaded');
    const linker = new Linker(target, 2);
    const feed = linker.ahead();
    feed.add(items);
    feed.end();
    const ahead = await linker.placedAhead();
    expect(ahead.folders).toContain('attachments/1/11/M49');
    expect(ahead.folders).not.toContain('attachments/1/12/M20');
    expect(ahead.files).toContain('attachments/1/11/M49/file-49.pdf');
    expect(ahead.files).not.toContain(taken.to);
    expect(ahead.files).toHaveLength(items.length - 2);
    expect(await readFile(blocked, 'utf8')).toBe('a file an interrupted run left');
    expect(await readFile(join(target, taken.to), 'utf8')).toBe('downloaded');
    for (const path of ahead.files) expect((await stat(join(target, path))).ino).toBe((await stat(join(root, path))).ino);
    const placed: LinkItem[] = [];
    await expect(linker.run(items, async (p) => {
      placed.push(...p);
    })).rejects.toThrow(`${blocked} is a file where the snapshot needs a folder`);
    for (const item of placed) expect((await stat(join(target, item.to))).ino).toBe((await stat(join(root, item.from))).ino);
    expect(placed.some((i) => i.to.includes('/11/'))).toBe(true);
  });

  it('place files fed in parts (a parent seen again later, files given twice), then hand them over without linking again', async () => {
    const { root, items } = await earlierSnapshot(60);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    const linker = new Linker(target, 2);
    const feed = linker.ahead();
    // Parts as a manifest read in turns gives them: both parents in the first part and again later.
    feed.add(items.slice(0, 50));
    feed.add(items.slice(40, 90));
    feed.add(items.slice(90));
    feed.end();
    const ahead = await linker.placedAhead();
    const folders = items.map((i) => dirname(i.to));
    expect(new Set(ahead.folders)).toEqual(new Set([...folders, 'attachments', 'attachments/1', 'attachments/1/11', 'attachments/1/12']));
    expect(new Set(ahead.files)).toEqual(new Set(items.map((i) => i.to)));
    const placed: LinkItem[] = [];
    await linker.run(items.slice(1), async (p, r) => {
      // Nothing is left to link: no thread is started.
      expect(linker.workers.size).toBe(0);
      expect(r).toEqual([]);
      placed.push(...p);
    });
    expect(placed).toHaveLength(items.length - 1);
    for (const item of items) expect((await stat(join(target, item.to))).ino).toBe((await stat(join(root, item.from))).ino);
    // The first file changed since: the listing gives another size, so it is not taken over.
    const changed = { ...items[0]!, size: items[0]!.size + 1 };
    const refused: LinkItem[] = [];
    await linker.run([changed], async (_, r) => {
      refused.push(...r);
    });
    expect(refused).toEqual([changed]);
  });

  it('with links off, make only the folders ahead: no file is there before run links it and hands it over', async () => {
    const { root, items } = await earlierSnapshot(20);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    const linker = new Linker(target, 2);
    const feed = linker.ahead({ links: false });
    feed.add(items);
    feed.end();
    const ahead = await linker.placedAhead();
    // Its folders are on disk; the threads keep no list of them (a folder a member, 100,000 in a large company).
    expect(ahead).toEqual({ folders: [], files: [] });
    for (const folder of [...items.map((i) => dirname(i.to)), 'attachments', 'attachments/1', 'attachments/1/11', 'attachments/1/12']) {
      expect((await lstat(join(target, folder))).isDirectory(), folder).toBe(true);
    }
    for (const item of items) expect(await lstat(join(target, item.to)).then(() => true, () => false), item.to).toBe(false);
    const placed: LinkItem[] = [];
    await linker.run(items, async (p) => {
      placed.push(...p);
    });
    expect(placed).toHaveLength(items.length);
    for (const item of items) expect((await stat(join(target, item.to))).ino).toBe((await stat(join(root, item.from))).ino);
  });

  it('link into the folders made ahead on the threads that made them: a part not seen ahead is linked too, and a second run still links', async () => {
    const { root, items } = await earlierSnapshot(300);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    const linker = new Linker(target, 2);
    const feed = linker.ahead({ links: false });
    // Only the first file part's folders are made ahead; the second part's are made by the run.
    feed.add(items.filter((i) => i.to.includes('/11/')));
    feed.end();
    await linker.placedAhead();
    expect((await lstat(join(target, 'attachments/1/11/M299'))).isDirectory()).toBe(true);
    expect(await lstat(join(target, 'attachments/1/12/M0')).then(() => true, () => false)).toBe(false);
    const placed: LinkItem[] = [];
    const first = items.slice(0, 500);
    await linker.run(first, async (p, r) => {
      expect(r).toEqual([]);
      placed.push(...p);
    });
    expect(placed.map((i) => i.to).sort()).toEqual(first.map((i) => i.to).sort());
    // A listing again (expired URLs) hands over the rest: its threads are new ones.
    await linker.run(items.slice(500), async (p) => {
      placed.push(...p);
    });
    expect(placed).toHaveLength(items.length);
    for (const item of items) expect((await stat(join(target, item.to))).ino, item.to).toBe((await stat(join(root, item.from))).ino);
    expect(linker.workers.size).toBe(0);
    await linker.release();
  });

  it('take over a link that a stopped run placed ahead, and replace a file of other bytes', async () => {
    const { root, items } = await earlierSnapshot(3);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    const first = new Linker(target, 1);
    const feed = first.ahead();
    feed.add(items);
    feed.end();
    await first.placedAhead();
    // The stopped run's file at one place was not the earlier one: it goes, and the link comes.
    const other = items[1]!;
    await rm(join(target, other.to));
    await writeFile(join(target, other.to), 'x'.repeat(other.size));
    const { run, placed, refused } = await linkAll(target, items, 1);
    await run;
    expect(refused).toEqual([]);
    expect(placed).toHaveLength(items.length);
    for (const item of items) expect((await stat(join(target, item.to))).ino).toBe((await stat(join(root, item.from))).ino);
  });

  it('fail within seconds, rather than hang, when its thread dies with batches already answered', async () => {
    const { items } = await earlierSnapshot(700);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    await mkdir(target);
    const linker = new Linker(target, 1);
    let calls = 0;
    const run = linker.run(items, async () => {
      calls += 1;
      if (calls > 1) return;
      // The batches sent ahead are answered meanwhile; then the thread is ended while idle.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(linker.workers.size).toBe(1);
      await Promise.all([...linker.workers].map((worker) => worker.terminate()));
    });
    const outcome = await Promise.race([
      run.then(() => 'finished', (error: Error) => error.message),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5000)),
    ]);
    expect(outcome).toMatch(/^the linking thread exited with/);
  });

  it('remove the files of batches linked but never recorded when recording one fails', async () => {
    const { items } = await earlierSnapshot(700);
    const target = join(tempDir('wds-linker-'), 'snap.partial');
    await mkdir(target);
    const linker = new Linker(target, 1);
    const recorded = new Set<string>();
    let calls = 0;
    const run = linker.run(items, async (placed) => {
      calls += 1;
      if (calls === 1) {
        for (const item of placed) recorded.add(item.to);
        return;
      }
      // Like the folder sink whose manifest append failed: this batch's files are removed by it,
      // after the batches sent ahead have landed.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await Promise.all(placed.map((item) => rm(join(target, item.to), { force: true })));
      throw new Error('the manifest append failed');
    });
    await expect(run).rejects.toThrow('the manifest append failed');
    const present = new Set<string>();
    for (const item of items) {
      if (await lstat(join(target, item.to)).then(() => true, () => false)) present.add(item.to);
    }
    expect(recorded.size).toBeGreaterThan(0);
    expect(present).toEqual(recorded);
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
