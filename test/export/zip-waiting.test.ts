/**
 * Files waiting for the zip (src/sinks/zip.ts): they wait in blocks of WaitingBlocks that are used
 * again once the zip's writer has written them, so the tests check both sides: the blocks (reuse,
 * the budget, waiting in order) and the zip, whose every entry must hold its own bytes however
 * the blocks were passed from file to file.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readZipExport, sha256, tempDir } from '../helpers/export.js';
import { WaitingBlocks, ZipSink } from '../../src/sinks/zip.js';

const KB = 1024;

describe('WaitingBlocks', () => {
  it('rounds sizes up to a power of two of 16 KB or more, and hands a block given back out again', async () => {
    const blocks = new WaitingBlocks(1024 * KB);
    const small = await blocks.take(100);
    expect(small.length).toBe(16 * KB);
    const photo = await blocks.take(20 * KB + 1);
    expect(photo.length).toBe(32 * KB);
    expect((await blocks.take(32 * KB)).length).toBe(32 * KB);
    blocks.giveBack(photo, true);
    expect(await blocks.take(30 * KB)).toBe(photo);
  });

  it('makes a file wait while the budget is taken, and serves the waiting in order', async () => {
    const blocks = new WaitingBlocks(64 * KB);
    const a = await blocks.take(32 * KB);
    const b = await blocks.take(32 * KB);
    const served: string[] = [];
    const first = blocks.take(32 * KB).then((block) => (served.push('first'), block));
    const second = blocks.take(10 * KB).then((block) => (served.push('second'), block));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(served).toEqual([]);
    blocks.giveBack(a, true);
    expect(await first).toBe(a);
    // The second waits behind the first, though a smaller block would have fitted nowhere either.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(served).toEqual(['first']);
    blocks.giveBack(b, true);
    // A free 32 KB block is let go to make room for the 16 KB one.
    const made = await second;
    expect(made.length).toBe(16 * KB);
    expect(made).not.toBe(b);
    expect(served).toEqual(['first', 'second']);
  });

  it('never hands out again a block something else may still hold, and frees its room', async () => {
    const blocks = new WaitingBlocks(32 * KB);
    const held = await blocks.take(32 * KB);
    const next = blocks.take(32 * KB);
    blocks.giveBack(held, false);
    expect(await next).not.toBe(held);
  });

  it('refuses a size over the budget instead of waiting for ever', () => {
    expect(() => new WaitingBlocks(64 * KB).take(65 * KB)).toThrow(/over the budget/);
  });
});

describe('zip sink: files waiting in memory', () => {
  it('every entry holds its own bytes while blocks pass from file to file', async () => {
    const file = join(tempDir(), 'many.zip');
    const sink = await ZipSink.create(file);
    const expected = new Map<string, Buffer>();
    // Many small files at once, in pieces, committed in an order of their own: stored photos and
    // deflated text, some below the 4 KB the zip's writer joins with their neighbours.
    const files = Array.from({ length: 300 }, (_, i) => {
      const size = [500, 3 * KB, 15 * KB, 20 * KB, 70 * KB, 300 * KB][i % 6]! + i;
      const name = i % 5 === 0 ? `notes/${i}.txt` : `photos/${i}.jpg`;
      const data = i % 5 === 0 ? Buffer.from('line of text\n'.repeat(Math.ceil(size / 13)).slice(0, size)) : randomBytes(size);
      expected.set(name, data);
      return { name, data };
    });
    await Promise.all(files.map(async ({ name, data }, i) => {
      const writer = await sink.open(name, data.length);
      for (let at = 0; at < data.length; at += 7_000) {
        await writer.write(Buffer.from(data.subarray(at, at + 7_000)));
        if ((i + at) % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      const digest = await writer.commit();
      expect(digest).toEqual({ size: data.length, sha256: sha256(data) });
    }));
    await sink.finish();

    const zip = await readZipExport(file);
    expect(zip.files.size).toBe(files.length);
    for (const [name, data] of expected) {
      const entry = zip.files.get(name)!;
      expect(entry.sha256, name).toBe(sha256(data));
      if (name.endsWith('.jpg')) {
        // Stored whole, with its sizes in the local header for streaming readers.
        expect(entry.compressionMethod).toBe(0);
        expect(entry.local!.flags & 8).toBe(0);
        expect(entry.local!.size).toBe(data.length);
      } else expect(entry.compressionMethod).toBe(8);
    }
  });

  it('a file that starts over larger than its block (a new version) is stored in its new version', async () => {
    const file = join(tempDir(), 'changed.zip');
    const sink = await ZipSink.create(file);
    const old = randomBytes(10 * KB);
    const newer = randomBytes(50 * KB);
    const writer = await sink.open('photos/P1.jpg', old.length);
    await writer.write(old.subarray(0, 6 * KB));
    await writer.restart();
    for (let at = 0; at < newer.length; at += 16 * KB) await writer.write(newer.subarray(at, at + 16 * KB));
    expect(await writer.commit()).toEqual({ size: newer.length, sha256: sha256(newer) });
    // The block it left is used by the next file, and the first keeps its bytes.
    const next = randomBytes(12 * KB);
    const second = await sink.open('photos/P2.jpg', next.length);
    await second.write(next);
    await second.commit();
    await sink.finish();
    const zip = await readZipExport(file);
    expect(zip.files.get('photos/P1.jpg')!.sha256).toBe(sha256(newer));
    expect(zip.files.get('photos/P2.jpg')!.sha256).toBe(sha256(next));
  });
});
