/**
 * A photo is whole when its end marker is reached the way decoders read the file (image-end.ts):
 * bytes after a JPEG's EOI (a motion photo's video), after a GIF's trailer (a newline, zero
 * padding) are no part of the image and the file goes as it is; an animated PNG is a PNG. A file
 * cut short is refused, also when an EXIF thumbnail puts an FF D9 into its first bytes. Every file
 * is run through the photo import against the emulator, which stores what was sent.
 */
import sharp from 'sharp';
import { fileTypeFromBuffer } from 'file-type';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import type { PhotoImportResult } from '../../src/pipelines/photo-import.js';
import {
  importPhotos, itemFor, noisyJpeg, noisyPng, photoHashes, plain, sha256, startCapturingProxy, writeFiles, type CapturingProxy,
} from './photo-helpers.js';
import { apng, motionPhoto, withExifThumbnail } from './image-files.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let proxy: CapturingProxy;
let client: WdsClient;
let files: Record<string, Buffer>;
let before: Map<string, string | null>;
let after: Map<string, string | null>;
let result: PhotoImportResult;

const sentFor = (code: string): Buffer[] => proxy.sent.filter((s) => s.code === code).map((s) => s.data);

beforeAll(async () => {
  proxy = await startCapturingProxy(emu().url);
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
  const gif = await plain(60, 40, 3).gif().toBuffer();
  const noisyGif = await sharp(await noisyPng(160, 120, 5)).gif().toBuffer();
  const big = await noisyJpeg(400, 300, 6);
  const png = await noisyPng(160, 120, 7);
  files = {
    'A0001.jpg': motionPhoto(await plain(120, 90, 1).jpeg().toBuffer(), 60_000),
    'A0002.gif': Buffer.concat([gif, Buffer.from('\n')]),
    'A0003.gif': Buffer.concat([gif, Buffer.alloc(512)]),
    'A0004.png': apng(await plain(100, 80, 4).png().toBuffer()),
    'A0005.jpg': withExifThumbnail(big, await plain(32, 24, 8).jpeg().toBuffer()).subarray(0, 30_000),
    'A0006.gif': noisyGif.subarray(0, Math.floor(noisyGif.length / 2)),
    'A0007.png': png.subarray(0, Math.floor(png.length / 2)),
  };
  const dir = await writeFiles(tempDir('wds-photos-'), files);
  before = await photoHashes(emu());
  result = await importPhotos(client, dir);
  after = await photoHashes(emu());
}, 120_000);

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

describe('whole files with bytes after the end marker, and an animated PNG: ok, sent as they are', () => {
  it.each([
    ['A0001', 'A0001.jpg', 'a motion photo: 60,000 bytes of video after the JPEG'],
    ['A0002', 'A0002.gif', 'a GIF with a newline after its trailer'],
    ['A0003', 'A0003.gif', 'a GIF with 512 zero bytes after its trailer'],
    ['A0004', 'A0004.png', 'an APNG'],
  ])('%s (%s): %s', (code, name) => {
    const item = itemFor(result, name);
    expect(item.outcome, item.reason).toBe('ok');
    expect(sentFor(code).map(sha256)).toEqual([sha256(files[name]!)]);
    expect(after.get(code)).not.toBe(before.get(code));
  });

  it('the motion photo is stored byte for byte, video included (a JPEG is kept as sent)', () => {
    expect(after.get('A0001')).toBe(sha256(files['A0001.jpg']!));
  });

  it('the files are what they claim: file-type reads the APNG as image/apng, and every decoder stops at the end marker', async () => {
    expect(await fileTypeFromBuffer(files['A0004.png']!)).toEqual({ ext: 'apng', mime: 'image/apng' });
    for (const [name, size] of [['A0001.jpg', [120, 90]], ['A0002.gif', [60, 40]], ['A0004.png', [100, 80]]] as const) {
      const meta = await sharp(files[name]!, { failOn: 'error' }).metadata();
      expect([meta.width, meta.height], name).toEqual(size);
    }
  });
});

describe('files cut short: refused as truncated, never sent, the photo on the service kept', () => {
  it.each([
    ['A0005', 'A0005.jpg', 'JPG', 'a JPEG cut mid-scan, its EXIF thumbnail whole (an FF D9 in its first bytes)'],
    ['A0006', 'A0006.gif', 'GIF', 'a GIF cut in its image data'],
    ['A0007', 'A0007.png', 'PNG', 'a PNG cut in its image data'],
  ])('%s (%s): %s', (code, name, type) => {
    const item = itemFor(result, name);
    expect(item.outcome).toBe('invalid');
    expect(item.reason).toBe(`the ${type} file is truncated (its end marker is missing)`);
    expect(sentFor(code)).toEqual([]);
    expect(after.get(code)).toBe(before.get(code));
  });

  it('the cut JPEG holds the thumbnail\'s FF D9, so searching the whole file for one would let it in', () => {
    const cut = files['A0005.jpg']!;
    expect(cut.indexOf(Buffer.from([0xff, 0xd9]))).toBeGreaterThan(0);
    expect(cut.indexOf(Buffer.from([0xff, 0xd9]))).toBeLessThan(1000);
  });
});

it('with trimming on, the emulator decodes the whole files and stores its crop of each', async () => {
  const dir = await writeFiles(tempDir('wds-photos-'), {
    'A0001.jpg': files['A0001.jpg']!, 'A0002.gif': files['A0002.gif']!, 'A0004.png': files['A0004.png']!,
  });
  const run = await importPhotos(client, dir, { trimming: true });
  const now = await photoHashes(emu());
  for (const [code, name, side] of [['A0001', 'A0001.jpg', 90], ['A0002', 'A0002.gif', 40], ['A0004', 'A0004.png', 80]] as const) {
    const item = itemFor(run, name);
    expect(item.outcome, item.reason).toBe('ok');
    expect(now.get(code), code).not.toBe(after.get(code));
    const listing = await emu().api('GET', '/members/face_image');
    const entry = (listing.body.member_data as { code: string; download_url: string }[]).find((m) => m.code === code)!;
    const stored = await sharp(Buffer.from(await (await fetch(entry.download_url)).arrayBuffer())).metadata();
    expect([stored.format, stored.width, stored.height], code).toEqual(['jpeg', side, side]);
  }
});
