/**
 * A folder as an import source (DESIGN.md section 5): every file at any depth in a stable order,
 * read on demand; links refused and never followed; dotfiles, `__MACOSX/`, `Thumbs.db`, the
 * export's `manifest.jsonl` and `.wds-tmp/` skipped; reading under a byte limit.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { FolderSource } from '../../src/sources/folder.js';
import { tempDir } from '../helpers/export.js';
import { byPath, collect } from './helpers.js';

const jpeg = (color: string): Promise<Buffer> => sharp({ create: { width: 16, height: 16, channels: 3, background: color } }).jpeg().toBuffer();

function tree(files: Record<string, Buffer | string>): string {
  const dir = tempDir('wds-source-');
  for (const [path, data] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), data);
  }
  return dir;
}

describe('FolderSource', () => {
  it('yields every file at any depth, sorted by path in each folder, with its name and size', async () => {
    const red = await jpeg('#ff0000');
    const dir = tree({ 'b/A0003.jpg': red, 'A0002.jpg': red, 'a/deep/er/A0001.jpg': red, 'A0010.png': 'x', 'Z.jpg': 'z' });
    const got = await collect(new FolderSource(dir));
    expect(got.order).toEqual(['file:A0002.jpg', 'file:A0010.png', 'file:Z.jpg', 'file:a/deep/er/A0001.jpg', 'file:b/A0003.jpg']);
    expect(got.refused).toEqual([]);
    const file = byPath(got.files).get('a/deep/er/A0001.jpg')!;
    expect(file).toMatchObject({ fileName: 'A0001.jpg', size: red.length, where: join(dir, 'a/deep/er/A0001.jpg') });
    expect(file.code).toBeUndefined();
    expect(await file.read(10_000_000)).toEqual(red);
    // A second pass gives the same files in the same order.
    expect((await collect(new FolderSource(dir))).order).toEqual(got.order);
  });

  it('skips .wds-tmp/, manifest.jsonl, dotfiles, __MACOSX/ and Thumbs.db, and nothing else', async () => {
    const dir = tree({
      'A0001.jpg': 'a', '.DS_Store': 'x', '._A0001.jpg': 'x', 'Thumbs.db': 'x', 'sub/desktop.ini': 'x', 'manifest.jsonl': '{}',
      '.wds-tmp/1-abcd': 'x', '__MACOSX/._A0001.jpg': 'x', '.git/config': 'x', 'sub/A0002.jpg': 'b', 'sub/thumbs.jpg': 'c',
    });
    const got = await collect(new FolderSource(dir));
    expect(got.order).toEqual(['file:A0001.jpg', 'file:sub/A0002.jpg', 'file:sub/thumbs.jpg']);
  });

  it('refuses a link to a file and a link to a folder, and follows neither', async () => {
    const outside = tree({ 'secret.jpg': 'secret', 'more/B0001.jpg': 'more' });
    const dir = tree({ 'A0001.jpg': 'a' });
    symlinkSync(join(outside, 'secret.jpg'), join(dir, 'A0002.jpg'));
    symlinkSync(join(outside, 'more'), join(dir, 'linked'));
    const got = await collect(new FolderSource(dir));
    expect(got.files.map((f) => f.relPath)).toEqual(['A0001.jpg']);
    expect(got.refused).toEqual([
      { where: join(dir, 'A0002.jpg'), relPath: 'A0002.jpg', reason: 'is a link; links are not followed', fileName: 'A0002.jpg' },
      { where: join(dir, 'linked'), relPath: 'linked', reason: 'is a link; links are not followed', fileName: 'linked' },
    ]);
  });

  it('does not follow a link put in place of a file after the walk', async () => {
    const outside = tree({ 'secret.jpg': 'secret' });
    const dir = tree({ 'A0001.jpg': 'a' });
    const [file] = (await collect(new FolderSource(dir))).files;
    rmSync(join(dir, 'A0001.jpg'));
    symlinkSync(join(outside, 'secret.jpg'), join(dir, 'A0001.jpg'));
    await expect(file!.read(100)).rejects.toThrow(`${join(dir, 'A0001.jpg')}: is a link; links are not followed`);
    await expect(file!.open()).rejects.toThrow('is a link');
  });

  it('refuses what is not a regular file (a named pipe)', async () => {
    const dir = tree({ 'A0001.jpg': 'a' });
    execFileSync('mkfifo', [join(dir, 'A0002.jpg')]);
    const got = await collect(new FolderSource(dir));
    expect(got.files.map((f) => f.relPath)).toEqual(['A0001.jpg']);
    expect(got.refused).toEqual([{ where: join(dir, 'A0002.jpg'), relPath: 'A0002.jpg', reason: 'is not a regular file (a pipe, socket or device)', fileName: 'A0002.jpg' }]);
  });

  it('reads files on demand: what is read is the file as it is when read', async () => {
    const dir = tree({ 'A0001.jpg': 'first', 'A0002.jpg': 'second' });
    const iterator = new FolderSource(dir).entries()[Symbol.asyncIterator]();
    const first = await iterator.next();
    writeFileSync(join(dir, 'A0001.jpg'), 'changed');
    expect(first.value.kind).toBe('file');
    expect((await first.value.file.read(100)).toString()).toBe('changed');
    rmSync(join(dir, 'A0002.jpg'));
    const second = await iterator.next();
    // Removed between the listing and its turn: named as gone (the import skips it), not refused.
    expect(second.value).toMatchObject({ kind: 'refused', refused: { relPath: 'A0002.jpg', gone: true, fileName: 'A0002.jpg' } });
    expect((await iterator.next()).done).toBe(true);
  });

  it('read(maxBytes) rejects naming the file and the limit; open() streams the bytes', async () => {
    const data = Buffer.alloc(5 * 1024 * 1024 + 1, 7);
    const dir = tree({ 'A0001.jpg': data });
    const [file] = (await collect(new FolderSource(dir))).files;
    const where = join(dir, 'A0001.jpg');
    await expect(file!.read(5 * 1024 * 1024)).rejects.toThrow(`${where}: 5242881 bytes, over the limit of 5242880 bytes`);
    expect((await file!.read(5 * 1024 * 1024 + 1)).length).toBe(data.length);
    let streamed = 0;
    for await (const chunk of await file!.open()) streamed += (chunk as Buffer).length;
    expect(streamed).toBe(data.length);
    // A file that grew past the limit after the walk is stopped while reading.
    writeFileSync(where, Buffer.alloc(6 * 1024 * 1024));
    await expect(file!.read(5 * 1024 * 1024 + 1)).rejects.toThrow(`${where}: more than 5242881 bytes, over the limit of 5242881 bytes`);
  });

  it('a folder that does not exist is a fatal error naming it', async () => {
    const missing = join(tempDir('wds-source-'), 'nope');
    await expect(collect(new FolderSource(missing))).rejects.toThrow(`${missing}: ENOENT`);
  });
});
