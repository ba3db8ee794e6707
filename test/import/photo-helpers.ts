/**
 * Making real photo files in tests (sharp for the images, BMP written by hand, JPEGs padded to an
 * exact size with comment segments), running the photo import against the test emulator, and a
 * proxy that keeps the photos each update request carried, so a test sees the bytes as sent.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import sharp, { type Sharp } from 'sharp';
import { runPhotoImport, type PhotoImportOptions, type PhotoImportResult } from '../../src/pipelines/photo-import.js';
import { openSource } from '../../src/sources/open-source.js';
import type { ItemReport } from '../../src/stages/report.js';
import type { WdsClient } from '../../src/index.js';
import type { TestEmulator } from '../helpers/emulator.js';
import type { EmulatorState } from '../helpers/export.js';
import { startBodyProxy } from '../helpers/body-proxy.js';

export const MB5 = 5 * 1024 * 1024;

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** Noise, so that a JPEG of it does not compress. */
function noise(width: number, height: number, seed: number): Buffer {
  const pixels = Buffer.alloc(width * height * 3);
  let x = seed * 2654435761 >>> 0 || 1;
  for (let i = 0; i < pixels.length; i += 1) {
    // xorshift32: fast, and the same bytes for the same seed.
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    pixels[i] = x & 0xff;
  }
  return pixels;
}

/** A real JPEG of random pixels: about 0.83 bytes a pixel at quality 90, so its size is chosen by its sides. */
export function noisyJpeg(width: number, height: number, seed = 1, quality = 90): Promise<Buffer> {
  return sharp(noise(width, height, seed), { raw: { width, height, channels: 3 } }).jpeg({ quality }).toBuffer();
}

export function noisyPng(width: number, height: number, seed = 1): Promise<Buffer> {
  return sharp(noise(width, height, seed), { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/**
 * The PNG with 64 bytes of its image data scrambled: signature, header and IEND whole, so it looks
 * complete and its header reads, but its pixels do not decode.
 */
export function damagedPng(png: Buffer): Buffer {
  const out = Buffer.from(png);
  const at = Math.floor(out.length * 0.4);
  for (let i = at; i < at + 64; i += 1) out[i] = out[i]! ^ 0x5a;
  return out;
}

/** A real image of one colour, to write in any format sharp writes. */
export function plain(width = 80, height = 60, seed = 1): Sharp {
  return sharp({ create: { width, height, channels: 3, background: { r: (seed * 53) % 256, g: (seed * 97) % 256, b: (seed * 151) % 256 } } });
}

/** A 24-bit BMP written by hand (BITMAPINFOHEADER, bottom-up rows padded to 4 bytes): sharp cannot write one. */
export function bmp(width: number, height: number, rgb: [number, number, number] = [200, 40, 90]): Buffer {
  const row = Math.ceil((width * 3) / 4) * 4;
  const data = Buffer.alloc(54 + row * height);
  data.write('BM', 0, 'latin1');
  data.writeUInt32LE(data.length, 2);
  data.writeUInt32LE(54, 10);
  data.writeUInt32LE(40, 14);
  data.writeInt32LE(width, 18);
  data.writeInt32LE(height, 22);
  data.writeUInt16LE(1, 26);
  data.writeUInt16LE(24, 28);
  data.writeUInt32LE(0, 30);
  data.writeUInt32LE(row * height, 34);
  data.writeInt32LE(2835, 38);
  data.writeInt32LE(2835, 42);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const at = 54 + y * row + x * 3;
      data[at] = rgb[2];
      data[at + 1] = rgb[1];
      data[at + 2] = rgb[0];
    }
  }
  return data;
}

/**
 * The JPEG grown to exactly `size` bytes with comment segments (COM, 0xFFFE) after SOI: still a
 * whole, valid JPEG that any decoder reads.
 */
export function padJpeg(jpeg: Buffer, size: number): Buffer {
  let missing = size - jpeg.length;
  if (missing < 0) throw new Error(`the JPEG has ${jpeg.length} bytes, more than ${size}`);
  const segments: Buffer[] = [];
  while (missing > 0) {
    // A segment is 4 bytes of marker and length plus at most 65,533 bytes; none shorter than 4.
    let body = Math.min(missing - 4, 65_533);
    if (missing - (body + 4) > 0 && missing - (body + 4) < 4) body -= 4;
    if (body < 0) throw new Error(`cannot pad by ${missing} bytes`);
    const segment = Buffer.alloc(4 + body, 0x20);
    segment[0] = 0xff;
    segment[1] = 0xfe;
    segment.writeUInt16BE(body + 2, 2);
    segments.push(segment);
    missing -= segment.length;
  }
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);
}

/** Writes files under `dir` (names may hold folders) and returns `dir`. */
export async function writeFiles(dir: string, files: Record<string, Buffer | string>): Promise<string> {
  for (const [name, data] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), data);
  }
  return dir;
}

/** The photo import of a folder, zip or CSV, with trimming off unless asked. */
export async function importPhotos(
  client: WdsClient,
  path: string,
  options: Omit<PhotoImportOptions, 'client' | 'source'> = {},
): Promise<PhotoImportResult> {
  return runPhotoImport({ client, source: await openSource(path), trimming: false, ...options });
}

/** The report's item for a file whose path ends with `suffix`. */
export function itemFor(result: PhotoImportResult, suffix: string): ItemReport {
  const found = result.report.items.filter((i) => (i.path ?? i.key).endsWith(suffix));
  if (found.length !== 1) throw new Error(`${found.length} report items end with ${suffix}: ${JSON.stringify(result.report.items.map((i) => i.path))}`);
  return found[0]!;
}

/** sha256 of each member's photo in `GET /_emulator/state`, null for none. */
export async function photoHashes(emu: TestEmulator): Promise<Map<string, string | null>> {
  const s = (await emu.control('GET', '/state')) as EmulatorState;
  return new Map(s.members.map((m) => [m.code, m.photo?.sha256 ?? null]));
}

export interface Stats {
  requests: Record<string, number>;
  update_requests: number;
  rate_limited: number;
}

export const stats = (emu: TestEmulator): Promise<Stats> => emu.control('GET', '/stats') as Promise<Stats>;
export const resetStats = (emu: TestEmulator): Promise<unknown> => emu.control('POST', '/stats/reset');

/** POST (register) and PATCH (update) face image requests counted by the emulator. */
export async function photoRequests(emu: TestEmulator): Promise<{ register: number; update: number; rateLimited: number }> {
  const s = await stats(emu);
  return { register: s.requests['POST /members/face_image'] ?? 0, update: s.requests['PATCH /members/face_image'] ?? 0, rateLimited: s.rate_limited };
}

export interface SentPhoto {
  method: string;
  code: string;
  data: Buffer;
  dryRun: boolean;
}

export interface CapturingProxy {
  url: string;
  /** Every photo of every face image request, in the order sent. */
  sent: SentPhoto[];
  close: () => Promise<void>;
}

/**
 * A proxy in front of the emulator that forwards everything and keeps the photos of face image
 * register and update requests, decoded from the JSON body.
 */
export async function startCapturingProxy(target: string): Promise<CapturingProxy> {
  const sent: SentPhoto[] = [];
  const proxy = await startBodyProxy(target, (req, body) => {
    if (!(req.url ?? '').startsWith('/api/v2.0/members/face_image') || (req.method !== 'POST' && req.method !== 'PATCH')) return;
    const parsed = JSON.parse(body.toString('utf8')) as { member_data: { code: string; base64_face_image: string }[] };
    for (const item of parsed.member_data) {
      sent.push({ method: req.method, code: item.code, data: Buffer.from(item.base64_face_image, 'base64'), dryRun: req.headers['dry-run'] === '1' });
    }
  });
  return { ...proxy, sent };
}

/**
 * Whether a JPEG's EXIF block (as sharp reads it) points to a GPS IFD: tag 0x8825 among IFD0's
 * entries, either byte order. Written here, apart from the code under test.
 */
export async function hasGps(jpeg: Buffer): Promise<boolean> {
  const { exif } = await sharp(jpeg).metadata();
  if (!exif) return false;
  const tiff = exif.subarray(exif.subarray(0, 4).toString('latin1') === 'Exif' ? 6 : 0);
  const le = tiff[0] === 0x49;
  const u16 = (at: number): number => (le ? tiff.readUInt16LE(at) : tiff.readUInt16BE(at));
  const ifd0 = le ? tiff.readUInt32LE(4) : tiff.readUInt32BE(4);
  for (let i = 0; i < u16(ifd0); i += 1) if (u16(ifd0 + 2 + 12 * i) === 0x8825) return true;
  return false;
}
