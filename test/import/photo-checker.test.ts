/**
 * Photos are checked in a process of their own (src/stages/import/check/photo-checker.ts). What a user relies
 * on: an image that takes that process down costs the import one checker, not the run (the file
 * is checked again in a new one, and refused with the reason when it takes that one down too);
 * a file on disk is read there with the folder source's rules; and the process is gone when the
 * checks are done, so its memory is not held while requests are sent.
 */
import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { PhotoChecker } from '../../src/stages/import/check/photo-checker.js';
import { tempDir } from '../helpers/export.js';
import { noisyJpeg, sha256 } from './photo-helpers.js';

let dir: string;
let bigWebp: Buffer;
let smallJpeg: Buffer;
const checkers: PhotoChecker[] = [];

function newChecker(): PhotoChecker {
  const checker = new PhotoChecker();
  checkers.push(checker);
  return checker;
}

/** Whether a process of that id still runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The checker's process once it is a different one from `pid` (after that one was killed). */
async function nextPid(checker: PhotoChecker, pid: number): Promise<number> {
  for (;;) {
    const now = await checker.running();
    if (now !== pid) return now;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

beforeAll(async () => {
  dir = tempDir('wds-checker-');
  // Large enough that converting it takes a while: the kill lands while it is being checked.
  bigWebp = await sharp(await noisyJpeg(3000, 2000, 7)).webp({ quality: 90 }).toBuffer();
  smallJpeg = await noisyJpeg(120, 90, 3);
});

afterEach(async () => {
  await Promise.all(checkers.splice(0).map((c) => c.close()));
});

it('a checker killed while converting a photo: the photo is checked again in a new one and converted', async () => {
  const checker = newChecker();
  const output = join(dir, 'once.jpg');
  const verdict = checker.check(bigWebp, { normalize: true, output });
  const first = await checker.running();
  process.kill(first, 'SIGKILL');
  const result = await verdict;
  expect(result).toMatchObject({ ok: true, type: 'jpg', converted: expect.stringContaining('converted WEBP to JPEG') });
  expect(await checker.running()).not.toBe(first);
  expect(await sharp(await readFile(output)).metadata()).toMatchObject({ format: 'jpeg', width: 3000, height: 2000 });
});

it('a photo that ends two checkers is refused with that reason, and the next photo is checked as usual', async () => {
  const checker = newChecker();
  const verdict = checker.check(bigWebp, { normalize: true, output: join(dir, 'twice.jpg') });
  const first = await checker.running();
  process.kill(first, 'SIGSEGV');
  process.kill(await nextPid(checker, first), 'SIGSEGV');
  expect(await verdict).toEqual({ ok: false, reason: 'checking it ended the image checker 2 times (signal SIGSEGV): the image library cannot read it safely' });
  expect(await checker.check(smallJpeg, { normalize: true, output: join(dir, 'next.jpg') })).toEqual({ ok: true, type: 'jpg', size: smallJpeg.length, sha256: sha256(smallJpeg) });
});

it('a file on disk is read by the checker with the folder rules: a link is refused, a real file is checked', async () => {
  const checker = newChecker();
  const real = join(dir, 'A0001.jpg');
  await writeFile(real, smallJpeg);
  const link = join(dir, 'A0002.jpg');
  await symlink(real, link);
  expect(await checker.check({ path: real, size: smallJpeg.length }, { normalize: true, output: join(dir, 'r.jpg') })).toEqual({ ok: true, type: 'jpg', size: smallJpeg.length, sha256: sha256(smallJpeg) });
  expect(await checker.check({ path: link, size: smallJpeg.length }, { normalize: true, output: join(dir, 'l.jpg') }))
    .toEqual({ ok: false, reason: `${link}: is a link; links are not followed` });
  const gone = join(dir, 'A0003.jpg');
  const missing = await checker.check({ path: gone, size: 10 }, { normalize: true, output: join(dir, 'g.jpg') });
  // Gone since it was listed: said as such (the report's item names the file).
  expect(missing.ok ? '' : missing.reason).toContain('gone before it was read');
});

it('closing the checker ends its process (its memory is not held while the import sends)', async () => {
  const checker = newChecker();
  expect(await checker.check(smallJpeg, { normalize: true, output: join(dir, 'c.jpg') })).toMatchObject({ ok: true });
  const pid = await checker.running();
  expect(alive(pid)).toBe(true);
  await checker.close();
  expect(alive(pid)).toBe(false);
  await expect(checker.check(smallJpeg, { normalize: true, output: join(dir, 'd.jpg') })).rejects.toThrow('the photo checker is closed');
});

it('Ctrl-C reaching the checker (the whole process group gets it) does not end it: the photo in hand is converted there, and the closed channel ends it', async () => {
  const checker = newChecker();
  const output = join(dir, 'interrupted.jpg');
  const verdict = checker.check(bigWebp, { normalize: true, output });
  const pid = await checker.running();
  process.kill(pid, 'SIGINT');
  process.kill(pid, 'SIGTERM');
  expect(await verdict).toMatchObject({ ok: true, converted: expect.stringContaining('converted WEBP to JPEG') });
  expect(await checker.running()).toBe(pid);
  expect(await sharp(await readFile(output)).metadata()).toMatchObject({ format: 'jpeg', width: 3000, height: 2000 });
  await checker.close();
  expect(alive(pid)).toBe(false);
});
