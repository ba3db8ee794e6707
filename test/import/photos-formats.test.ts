/**
 * The photo import judges files by their bytes and size (DESIGN.md section 5; api-v2.md 4.4
 * Members 7): JPEG, PNG and GIF within 5 MB go as they are, byte for byte; HEIC, WebP, TIFF, BMP,
 * oversized and rotated photos are converted to JPEG under 5 MB with the orientation applied and
 * the location stripped; a renamed executable, an empty file and a truncated JPEG are refused with
 * their reason and never sent. Every file is real and made here: with sharp, BMP by hand, HEIC by
 * heic.ts (an HEVC bitstream in a HEIF container, which sharp's prebuilt build cannot write). PNG
 * and GIF are stored by the service as JPEG (it serves jpg only), so "as they are" is checked on
 * the bytes sent, seen by a proxy; JPEGs also by sha256 in /_emulator/state.
 */
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import type { PhotoImportResult } from '../../src/pipelines/photo-import.js';
import { checkPhoto } from '../../src/stages/import/check/photo-check.js';
import {
  MB5, bmp, damagedPng, hasGps, importPhotos, itemFor, noisyJpeg, noisyPng, padJpeg, photoHashes, plain, sha256, startCapturingProxy, writeFiles,
  type CapturingProxy,
} from './photo-helpers.js';
import { heic } from './heic.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });
const LIMITS = { update: { limit: 10000, windowMs: 60_000 } };

/** A real executable of this machine, renamed: the first one found. */
const EXECUTABLE = ['/bin/true', '/usr/bin/true', process.execPath][0]!;

let proxy: CapturingProxy;
let client: WdsClient;
let files: Record<string, Buffer>;
let before: Map<string, string | null>;
let after: Map<string, string | null>;
let result: PhotoImportResult;

/** What the proxy saw sent for a member: one photo, or undefined. */
function sentFor(code: string): Buffer | undefined {
  const all = proxy.sent.filter((s) => s.code === code);
  if (all.length > 1) throw new Error(`${code} was sent ${all.length} times`);
  return all[0]?.data;
}

/** The member's photo as the service serves it, through a fresh listing. */
async function download(code: string): Promise<Buffer> {
  const listing = await emu().api('GET', '/members/face_image');
  const entry = (listing.body.member_data as { code: string; download_url: string }[]).find((m) => m.code === code);
  if (!entry) throw new Error(`no photo listed for ${code}`);
  return Buffer.from(await (await fetch(entry.download_url)).arrayBuffer());
}

beforeAll(async () => {
  proxy = await startCapturingProxy(emu().url);
  client = clientFor(emu(), { baseUrl: proxy.url, limits: LIMITS });
  const exifed = await plain(80, 40, 9)
    .jpeg()
    .withMetadata({ orientation: 6 })
    .withExif({ IFD0: { Make: 'TestCam' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '35/1 41/1 2200/100', GPSLongitudeRef: 'E', GPSLongitude: '139/1 41/1 3000/100' } })
    .toBuffer();
  const whole = await noisyJpeg(400, 300, 13);
  const under5 = await noisyJpeg(2400, 2500, 14); // about 4.9 MB
  files = {
    'A0001.jpg': await plain(120, 90, 1).jpeg({ quality: 85 }).toBuffer(),
    'A0002.png': await plain(100, 80, 2).png().toBuffer(),
    'A0003.gif': await plain(60, 60, 3).gif().toBuffer(),
    'A0004.heic': heic(64, 48, [30, 120, 220]),
    'A0005.webp': await plain(90, 70, 5).webp().toBuffer(),
    'A0006.tif': await plain(90, 70, 6).tiff().toBuffer(),
    'A0007.bmp': bmp(50, 30),
    'A0008.jpg': await noisyJpeg(3200, 3200, 8),
    'A0009.jpg': exifed,
    'A0010.jpg': await plain(70, 50, 10).png().toBuffer(),
    'A0011.jpg': await readFile(EXECUTABLE),
    'A0012.jpg': Buffer.alloc(0),
    'A0013.jpg': whole.subarray(0, Math.floor(whole.length / 2)),
    'A0014.jpg': padJpeg(under5, MB5),
    'A0015.jpg': padJpeg(under5, MB5 + 1),
    'A0016.avif': await plain(64, 64, 16).heif({ compression: 'av1' }).toBuffer(),
    'A0018.png': damagedPng(await noisyPng(200, 200, 18)),
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

describe('sent as they are', () => {
  it('a JPEG made by sharp: ok, stored byte for byte (sha256 in /_emulator/state)', () => {
    const item = itemFor(result, 'A0001.jpg');
    expect(item.outcome, item.reason).toBe('ok');
    expect(sha256(sentFor('A0001')!)).toBe(sha256(files['A0001.jpg']!));
    expect(after.get('A0001')).toBe(sha256(files['A0001.jpg']!));
    expect(before.get('A0001')).not.toBe(after.get('A0001'));
  });

  it.each([['A0002', 'A0002.png'], ['A0003', 'A0003.gif']])('%s: a PNG or GIF is ok and sent byte for byte', async (code, name) => {
    const item = itemFor(result, name);
    expect(item.outcome, item.reason).toBe('ok');
    expect(sha256(sentFor(code)!)).toBe(sha256(files[name]!));
    // The service serves jpg only (api-v2.md 4.4 Members 6): it stored the same picture as JPEG.
    expect(after.get(code)).not.toBe(before.get(code));
    const stored = await sharp(await download(code)).metadata();
    expect(stored.format).toBe('jpeg');
    expect([stored.width, stored.height]).toEqual(name.endsWith('.png') ? [100, 80] : [60, 60]);
  });

  it('a PNG named .jpg: the bytes decide, it is ok and sent as it is', () => {
    const item = itemFor(result, 'A0010.jpg');
    expect(item.outcome, item.reason).toBe('ok');
    expect(sha256(sentFor('A0010')!)).toBe(sha256(files['A0010.jpg']!));
  });

  it('a JPEG of exactly 5 MB (5,242,880 bytes) is ok and stored byte for byte', () => {
    const item = itemFor(result, 'A0014.jpg');
    expect(files['A0014.jpg']!.length).toBe(5_242_880);
    expect(item.outcome, item.reason).toBe('ok');
    expect(after.get('A0014')).toBe(sha256(files['A0014.jpg']!));
  });
});

describe('converted to JPEG', () => {
  it.each([
    ['A0004', 'A0004.heic', 'HEIC', [64, 48]],
    ['A0005', 'A0005.webp', 'WEBP', [90, 70]],
    ['A0006', 'A0006.tif', 'TIF', [90, 70]],
    ['A0007', 'A0007.bmp', 'BMP', [50, 30]],
    ['A0016', 'A0016.avif', 'AVIF', [64, 64]],
  ] as const)('%s (%s): converted, reported, stored as the JPEG sent', async (code, name, type, size) => {
    const item = itemFor(result, name);
    expect(item.outcome, item.reason).toBe('converted');
    expect(item.reason).toContain(`converted ${type} to JPEG`);
    // The item's size and sha256 are those of the user's file, not of the JPEG made from it.
    expect([item.size, item.sha256]).toEqual([files[name]!.length, sha256(files[name]!)]);
    const sent = sentFor(code)!;
    const meta = await sharp(sent).metadata();
    expect(meta.format).toBe('jpeg');
    expect([meta.width, meta.height]).toEqual(size);
    expect(after.get(code)).toBe(sha256(sent));
  });

  it('the HEIC was decoded to its pixels: the colour it was made with', async () => {
    const { dominant } = await sharp(sentFor('A0004')!).stats();
    expect(Math.abs(dominant.r - 30)).toBeLessThan(12);
    expect(Math.abs(dominant.g - 120)).toBeLessThan(12);
    expect(Math.abs(dominant.b - 220)).toBeLessThan(12);
  });

  it('the BMP was read to its pixels: the colour it was written with', async () => {
    const { dominant } = await sharp(sentFor('A0007')!).stats();
    expect(Math.abs(dominant.r - 200)).toBeLessThan(12);
    expect(Math.abs(dominant.g - 40)).toBeLessThan(12);
    expect(Math.abs(dominant.b - 90)).toBeLessThan(12);
  });

  it('an 8 MB JPEG of noise is shrunk under 5 MB', async () => {
    expect(files['A0008.jpg']!.length).toBeGreaterThan(8_000_000);
    const item = itemFor(result, 'A0008.jpg');
    expect(item.outcome, item.reason).toBe('converted');
    expect(item.reason).toMatch(/over the 5 MB limit/);
    const sent = sentFor('A0008')!;
    expect(sent.length).toBeLessThanOrEqual(MB5);
    expect((await sharp(sent).metadata()).format).toBe('jpeg');
    expect(after.get('A0008')).toBe(sha256(sent));
  });

  it('5 MB + 1 byte is converted and sent under 5 MB', () => {
    const item = itemFor(result, 'A0015.jpg');
    expect(item.outcome, item.reason).toBe('converted');
    expect(item.reason).toContain('5,242,881 bytes is over the 5 MB limit (5,242,880 bytes)');
    expect(sentFor('A0015')!.length).toBeLessThanOrEqual(MB5);
  });

  it('EXIF orientation 6 is applied (width and height swapped) and the GPS data dropped', async () => {
    const original = await sharp(files['A0009.jpg']!).metadata();
    expect([original.width, original.height, original.orientation]).toEqual([80, 40, 6]);
    expect(await hasGps(files['A0009.jpg']!)).toBe(true);
    const item = itemFor(result, 'A0009.jpg');
    expect(item.outcome, item.reason).toBe('converted');
    expect(item.reason).toContain('EXIF rotation applied');
    expect(item.reason).toContain('location data removed');
    const sent = sentFor('A0009')!;
    const meta = await sharp(sent).metadata();
    expect([meta.width, meta.height]).toEqual([40, 80]);
    expect(meta.orientation ?? 1).toBe(1);
    expect(await hasGps(sent)).toBe(false);
    expect(sent.includes(Buffer.from('TestCam'))).toBe(false);
  });
});

it('a transparent WebP is converted onto white, not black (JPEG has no alpha)', async () => {
  const clear = await sharp({ create: { width: 20, height: 20, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).webp({ lossless: true }).toBuffer();
  const result = await checkPhoto(clear, { normalize: true });
  if (!result.ok) throw new Error(result.reason);
  const { dominant } = await sharp(result.data).stats();
  expect(dominant).toEqual({ r: 248, g: 248, b: 248 });
});

it('with an output file, a conversion is written there by sharp and not kept in memory (issue 5)', async () => {
  const output = `${tempDir('wds-photos-')}/converted.jpg`;
  const result = await checkPhoto(files['A0005.webp']!, { normalize: true, output });
  if (!result.ok) throw new Error(result.reason);
  expect(result.converted).toContain('converted WEBP to JPEG');
  expect(result.data).toBeUndefined();
  const written = await readFile(output);
  expect(written.length).toBe(result.size);
  expect(await sharp(written).metadata()).toMatchObject({ format: 'jpeg', width: 90, height: 70 });
});

it('a damaged image checked beside others keeps its reason (libvips has one error message for the process)', async () => {
  const damaged = damagedPng(await noisyPng(200, 200, 18));
  for (let i = 0; i < 20; i += 1) {
    const [result] = await Promise.all([checkPhoto(damaged, { normalize: true }), checkPhoto(files['A0001.jpg']!, { normalize: true }), checkPhoto(files['A0002.png']!, { normalize: true })]);
    expect(result.ok ? 'ok' : result.reason).toMatch(/the PNG file cannot be read as an image \(.*libpng read error\)/);
  }
});

describe('refused with the reason, never sent, the photo on the service kept', () => {
  it.each([
    ['A0011', 'A0011.jpg', /not an image the service accepts: the bytes are application\/x-elf/],
    ['A0012', 'A0012.jpg', /the file is empty/],
    ['A0013', 'A0013.jpg', /JPG file is truncated/],
    ['A0018', 'A0018.png', /the PNG file cannot be read as an image \(.*libpng read error\)/],
  ])('%s (%s)', (code, name, reason) => {
    if (code === 'A0011') expect(files[name]!.subarray(0, 4)).toEqual(Buffer.from('\x7fELF', 'latin1'));
    const item = itemFor(result, name);
    expect(item.outcome).toBe('invalid');
    expect(item.reason).toMatch(reason);
    // One line in the report, whatever log the decoder handed back.
    expect(item.reason).not.toContain('\n');
    expect(sentFor(code)).toBeUndefined();
    expect(after.get(code)).toBe(before.get(code));
  });

  it('the run counts them as problems (exit code 3), and nothing else changed', () => {
    expect(result.report.counts).toMatchObject({ invalid: 4, conflict: 0, failed: 0 });
    expect(result.report.problems).toBe(4);
    for (const [code, hash] of before) {
      if (!Object.keys(files).some((name) => name.startsWith(`${code}.`))) expect(after.get(code), code).toBe(hash);
    }
  });
});

describe('--no-normalize', () => {
  it('refuses what needs converting (5 MB + 1, WebP, rotated), says why, and sends only the rest', async () => {
    const dir = tempDir('wds-photos-');
    await writeFiles(dir, {
      'A0020.jpg': files['A0015.jpg']!,
      'A0021.webp': files['A0005.webp']!,
      'A0022.jpg': files['A0009.jpg']!,
      'A0023.jpg': files['A0001.jpg']!,
    });
    const sentBefore = proxy.sent.length;
    const hashes = await photoHashes(emu());
    const run = await importPhotos(client, dir, { normalize: false });
    for (const name of ['A0020.jpg', 'A0021.webp', 'A0022.jpg']) {
      const item = itemFor(run, name);
      expect(item.outcome, name).toBe('invalid');
      expect(item.reason, name).toContain('conversion is off: --no-normalize');
    }
    expect(itemFor(run, 'A0020.jpg').reason).toContain('over the 5 MB limit');
    expect(itemFor(run, 'A0021.webp').reason).toContain('WEBP is not accepted by the service');
    expect(itemFor(run, 'A0023.jpg').outcome).toBe('ok');
    expect(proxy.sent.slice(sentBefore).map((s) => s.code)).toEqual(['A0023']);
    const now = await photoHashes(emu());
    for (const code of ['A0020', 'A0021', 'A0022']) expect(now.get(code), code).toBe(hashes.get(code));
  });
});
