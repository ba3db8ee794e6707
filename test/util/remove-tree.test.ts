/**
 * removeTree, which retention and a discarded snapshot use instead of `fs.rm(recursive)` (which
 * opens every entry of a folder at once): it removes a snapshot-like tree whole, read-only files
 * included, with `rm -rf` and, where there is none, by its own walk.
 */
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeTree } from '../../src/util/remove-tree.js';

const made: string[] = [];
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A folder of `count` read-only files beside a nested part, as a snapshot holds them. */
async function snapshotLike(count: number): Promise<string> {
  const top = await mkdtemp(join(tmpdir(), 'remove-tree-'));
  made.push(top);
  const tree = join(top, 'snap');
  await mkdir(join(tree, 'attachments', '1', '2', 'G1'), { recursive: true });
  await mkdir(join(tree, 'photos'));
  for (let i = 0; i < count; i += 1) await writeFile(join(tree, 'photos', `G${i}.jpg`), 'x', { mode: 0o444 });
  await writeFile(join(tree, 'attachments', '1', '2', 'G1', 'a.pdf'), 'y', { mode: 0o444 });
  await chmod(join(tree, 'attachments', '1', '2', 'G1', 'a.pdf'), 0o444);
  return tree;
}

describe('removeTree', () => {
  it.each([['with rm -rf', false], ['by its own walk where there is no rm', true]])('removes a folder of read-only files and folders whole (%s)', async (_, noRm) => {
    const tree = await snapshotLike(1500);
    const path = process.env.PATH;
    if (noRm) process.env.PATH = '';
    try {
      await removeTree(tree);
    } finally {
      process.env.PATH = path;
    }
    expect(await readdir(join(tree, '..'))).toEqual([]);
    // Gone already: no error.
    await removeTree(tree);
  });
});
