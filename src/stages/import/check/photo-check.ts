/**
 * Validation and normalisation of one face photo (DESIGN.md section 5; api-v2.md 4.4 Members 7).
 * The real type is read from the bytes (sniff.ts), not the name. A JPEG, PNG or GIF within 5 MB,
 * whole (image-end.ts), without EXIF rotation or location data, is sent as it is, byte for byte.
 * Anything else that is an image (HEIC, WebP, TIFF, BMP, AVIF, an oversized or rotated photo) is
 * converted to JPEG under 5 MB by sharp (HEIC decoded by heic-decode and BMP by bmp.ts into raw
 * pixels: sharp's prebuilt build reads neither), with the EXIF orientation applied and all
 * metadata, location included, dropped. With `normalize: false` such files are refused instead.
 *
 * Memory (issue 5): libvips allocates whole decoded frames (a WebP: 4 bytes a pixel, several times)
 * and region buffers on its worker threads, and glibc keeps what each thread freed in that thread's
 * malloc arena, up to twice the largest block freed so far. So conversions run one at a time,
 * libvips keeps no cache of operations (it held decoded frames of photos never opened again;
 * bench/notes.md, "Photo checks"), and a converted JPEG is written by libvips straight to the caller's file
 * instead of a growing output buffer. The import runs all of this in a process of its own with
 * allocator settings that only a new process can have (photo-checker.ts).
 */
import sharp, { type Metadata, type Sharp } from 'sharp';
import { MAX_FILE_BYTES } from '../../../spec/limits.js';
import { formatBytes } from '../../../util/format.js';
import { decodeBmp } from './bmp.js';
import { looksComplete } from './image-end.js';
import { sniff } from './sniff.js';

// No photo is opened again once checked: a cache of operations would only hold their frames.
sharp.cache(false);
// One libvips worker per image, as sharp picks by itself on glibc unless MALLOC_ARENA_MAX is set
// (then it picks one per CPU core, each with its own region buffers).
sharp.concurrency(1);

export type PhotoCheck =
  | {
    ok: true;
    type: string;
    /** Bytes to send. */
    size: number;
    /** The bytes to send: the file itself, or the converted JPEG unless it went to `output`. */
    data?: Buffer;
    /** What was converted and why; absent for a file sent as it is. */
    converted?: string;
  }
  | { ok: false; reason: string };

export interface CheckPhotoOptions {
  /** Convert what the service would refuse; false refuses it instead. */
  normalize: boolean;
  /**
   * Where a converted JPEG is written (libvips writes the file itself, so the JPEG is never held
   * in memory); without it the JPEG is returned as `data`.
   */
  output?: string;
}

const SENDABLE = new Set(['jpg', 'png', 'gif']);
const CONVERTIBLE = new Set(['heic', 'webp', 'tif', 'bmp', 'avif', 'jpg', 'png', 'gif']);

/** True when an EXIF block (as sharp gives it) has a GPS IFD pointer in IFD0 (tag 0x8825). */
export function exifHasLocation(exif: Buffer | undefined): boolean {
  if (!exif || exif.length < 14) return false;
  const start = exif.subarray(0, 6).toString('latin1') === 'Exif\0\0' ? 6 : 0;
  const tiff = exif.subarray(start);
  const little = tiff.subarray(0, 2).toString('latin1') === 'II';
  const u16 = (o: number): number => (little ? tiff.readUInt16LE(o) : tiff.readUInt16BE(o));
  const u32 = (o: number): number => (little ? tiff.readUInt32LE(o) : tiff.readUInt32BE(o));
  try {
    const ifd = u32(4);
    const count = u16(ifd);
    for (let i = 0; i < count; i += 1) if (u16(ifd + 2 + i * 12) === 0x8825) return true;
  } catch {
    return false;
  }
  return false;
}

/** Above this many pixels, JPEGs are written without optimised Huffman tables (see below). */
const OPTIMISE_CODING_MAX_PIXELS = 8_000_000;

/**
 * JPEG under 5 MB: at quality 90 when it fits, else made smaller in one step sized from the first
 * try (a JPEG's size follows its pixel count), aiming 10 % under the limit; each encode of a large
 * photo costs a full decode, so no ladder of tries. `open` gives a fresh pipeline on the source
 * each time (sharp pipelines run once). Transparent parts go on white, as a photo print would.
 * Optimised Huffman tables make libjpeg hold every DCT coefficient of the picture, about doubling
 * the peak of a large one (bench/notes.md, "Photo checks"), so large pictures go without. Written to `output` when given (each try overwrites it).
 */
async function toJpegUnderLimit(open: () => Sharp, output?: string): Promise<{ size: number; data?: Buffer }> {
  const meta = await open().metadata();
  const fullWidth = meta.autoOrient?.width ?? meta.width ?? 4000;
  const fullHeight = meta.autoOrient?.height ?? meta.height ?? 3000;
  const encode = async (quality: number, width: number): Promise<{ size: number; data?: Buffer }> => {
    let image = open().rotate().flatten({ background: '#ffffff' });
    if (width < fullWidth) image = image.resize({ width });
    const pixels = width * Math.round((fullHeight * width) / fullWidth);
    image = image.jpeg({ quality, optimiseCoding: pixels <= OPTIMISE_CODING_MAX_PIXELS });
    if (output) return { size: (await image.toFile(output)).size };
    const data = await image.toBuffer();
    return { size: data.length, data };
  };
  let width = fullWidth;
  let out = await encode(90, width);
  for (let attempt = 0; out.size > MAX_FILE_BYTES; attempt += 1) {
    width = Math.floor(width * Math.min(0.9, Math.sqrt((MAX_FILE_BYTES * 0.9) / out.size)));
    if (width < 64 || attempt === 5) throw new Error('cannot make it small enough');
    out = await encode(85, width);
  }
  return out;
}

/** The conversion under way, if any: the next one starts when it has ended (see the top). */
let converting: Promise<unknown> = Promise.resolve();

function oneConversionAtATime<T>(task: () => Promise<T>): Promise<T> {
  const run = converting.then(task);
  converting = run.catch(() => undefined);
  return run;
}

/**
 * libvips keeps one error message for the whole process, and sharp clears it after every call: an
 * image that fails while another finishes can lose its message (sharp then says "Unknown error").
 * Image work runs side by side (`beside`); a failure without its message is run again `alone`,
 * when no other image work runs, for the reason the user is shown.
 */
let running = 0;
let drained: (() => void) | undefined;
let gate: Promise<void> = Promise.resolve();

async function beside<T>(task: () => Promise<T>): Promise<T> {
  for (let open = gate; ; open = gate) {
    await open;
    if (open === gate) break;
  }
  running += 1;
  try {
    return await task();
  } finally {
    running -= 1;
    if (running === 0) drained?.();
  }
}

async function alone<T>(task: () => Promise<T>): Promise<T> {
  const before = gate;
  let open!: () => void;
  gate = new Promise((resolve) => (open = resolve));
  try {
    await before;
    if (running) await new Promise<void>((resolve) => (drained = resolve));
    drained = undefined;
    return await task();
  } finally {
    open();
  }
}

/**
 * A decoder's error as one line for a report: libvips hands back its whole error log, where a
 * damaged PNG can put a dozen "source: bad seek to N" lines (its reader retrying) before the
 * reason, depending on how much of the file it had read. Those go; the other lines are joined.
 */
export function decoderMessage(error: unknown): string {
  const lines = String((error as Error)?.message ?? error).split('\n').map((l) => l.trim()).filter((l) => l && !/^source: bad seek to \d+$/.test(l));
  return [...new Set(lines)].join('; ') || 'no reason given';
}

async function withItsMessage<T>(task: () => Promise<T>): Promise<T> {
  try {
    return await beside(task);
  } catch (error) {
    if ((error as Error).message !== 'Unknown error') throw error;
    return alone(task);
  }
}

/**
 * Decodes the whole image down to a thumbnail, so that damaged image data behind whole headers is
 * refused here rather than in the service's task, which decodes it (an NG there costs the whole
 * request and a resubmission). JPEG shrinks on load, so this stays cheap; warnings (a scan cut
 * short, stray bytes) pass, as they pass the service.
 */
async function decodeSmall(data: Buffer): Promise<void> {
  await sharp(data, { failOn: 'error' }).resize({ width: 32, height: 32, fit: 'inside' }).raw().toBuffer();
}

/** heic-decode with its libheif build (some 23 MB once loaded), loaded when the first HEIC comes. */
let heicDecoder: Promise<typeof import('heic-decode')> | undefined;

/** A sharp pipeline on the image, for the types sharp's prebuilt build cannot read by itself. */
async function opener(type: string, data: Buffer): Promise<() => Sharp> {
  if (type === 'heic') {
    // The decoded RGBA pixels go to sharp as they are: no JPEG made in JavaScript on the way.
    const { default: decodeHeic } = await (heicDecoder ??= import('heic-decode'));
    const image = await decodeHeic({ buffer: data });
    const pixels = Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength);
    return () => sharp(pixels, { raw: { width: image.width, height: image.height, channels: 4 } });
  }
  if (type === 'bmp') {
    const raw = decodeBmp(data);
    return () => sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: raw.channels } });
  }
  return () => sharp(data, { failOn: 'truncated' });
}

export async function checkPhoto(data: Buffer, options: CheckPhotoOptions): Promise<PhotoCheck> {
  if (data.length === 0) return { ok: false, reason: 'the file is empty' };
  // An animated PNG is a PNG (sniff.ts): sent as it is, the service reads its first frame.
  const { kind: type, what } = await sniff(data);
  if (!CONVERTIBLE.has(type)) {
    return { ok: false, reason: `not an image the service accepts: the bytes are ${what}; photos must be JPEG, PNG or GIF (or HEIC, WebP, TIFF, BMP, AVIF to convert)` };
  }
  if (SENDABLE.has(type) && !looksComplete(type, data)) {
    return { ok: false, reason: `the ${type.toUpperCase()} file is truncated (its end marker is missing)` };
  }
  let reasons: string[] = [];
  if (SENDABLE.has(type)) {
    let meta: Metadata;
    try {
      meta = await withItsMessage(async () => {
        const header = await sharp(data, { failOn: 'truncated' }).metadata();
        await decodeSmall(data);
        return header;
      });
    } catch (error) {
      return { ok: false, reason: `the ${type.toUpperCase()} file cannot be read as an image (${decoderMessage(error)})` };
    }
    if (data.length > MAX_FILE_BYTES) reasons.push(`${data.length.toLocaleString('en-US')} bytes is over the 5 MB limit (${MAX_FILE_BYTES.toLocaleString('en-US')} bytes)`);
    if ((meta.orientation ?? 1) !== 1) reasons.push('EXIF rotation applied');
    if (exifHasLocation(meta.exif)) reasons.push('location data removed');
    if (!reasons.length) return { ok: true, type, size: data.length, data };
  } else {
    reasons = [`${type.toUpperCase()} is not accepted by the service`];
  }
  if (!options.normalize) {
    return { ok: false, reason: `${reasons.join('; ')} (conversion is off: --no-normalize)` };
  }
  try {
    const out = await oneConversionAtATime(() => withItsMessage(async () => toJpegUnderLimit(await opener(type, data), options.output)));
    const converted = `converted ${type.toUpperCase()} to JPEG (${reasons.join('; ')}): ${formatBytes(data.length)} to ${formatBytes(out.size)}`;
    return { ok: true, type: 'jpg', size: out.size, converted, ...(out.data ? { data: out.data } : {}) };
  } catch (error) {
    return { ok: false, reason: `the ${type.toUpperCase()} file cannot be converted (${decoderMessage(error)})` };
  }
}
