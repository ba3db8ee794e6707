/**
 * BMP photos are converted to JPEG (DESIGN.md section 5), read by src/stages/import/check/bmp.ts because
 * sharp's prebuilt build has no BMP loader. The BMPs are written here byte by byte in the forms
 * Windows tools write: 24-bit bottom-up, 8-bit with a palette, 32-bit top-down with bit-field
 * masks, 16-bit 5-6-5; run-length encoded ones are refused with the reason.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { checkPhoto } from '../../src/stages/import/check/photo-check.js';
import { bmp } from './photo-helpers.js';

interface BmpSpec {
  width: number;
  height: number;
  bits: 8 | 16 | 32;
  compression?: number;
  masks?: [number, number, number, number];
  palette?: [number, number, number][];
  topDown?: boolean;
  /** Bytes of one pixel (or palette index) from its position. */
  pixel: (x: number, y: number) => number[];
}

/** A BMP with a BITMAPV4HEADER-sized info header when masks are given, else BITMAPINFOHEADER. */
function writeBmp(spec: BmpSpec): Buffer {
  const headerSize = spec.masks ? 108 : 40;
  const palette = spec.palette ?? [];
  const rowBytes = Math.ceil((spec.width * spec.bits) / 32) * 4;
  const dataOffset = 14 + headerSize + palette.length * 4;
  const out = Buffer.alloc(dataOffset + rowBytes * spec.height);
  out.write('BM', 0, 'latin1');
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(dataOffset, 10);
  out.writeUInt32LE(headerSize, 14);
  out.writeInt32LE(spec.width, 18);
  out.writeInt32LE(spec.topDown ? -spec.height : spec.height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(spec.bits, 28);
  out.writeUInt32LE(spec.compression ?? (spec.masks ? 3 : 0), 30);
  out.writeUInt32LE(palette.length, 46);
  if (spec.masks) spec.masks.forEach((m, i) => out.writeUInt32LE(m >>> 0, 54 + i * 4));
  palette.forEach(([r, g, b], i) => out.set([b, g, r, 0], 14 + headerSize + i * 4));
  for (let row = 0; row < spec.height; row += 1) {
    const y = spec.topDown ? row : spec.height - 1 - row;
    for (let x = 0; x < spec.width; x += 1) out.set(spec.pixel(x, y), dataOffset + row * rowBytes + (x * spec.bits) / 8);
  }
  return out;
}

/** The colour at (x, y) of the JPEG a check converted the BMP to. */
async function colourAt(data: Buffer, x: number, y: number): Promise<number[]> {
  const result = await checkPhoto(data, { normalize: true });
  if (!result.ok) throw new Error(result.reason);
  expect(result.converted).toContain('converted BMP to JPEG');
  const { data: raw, info } = await sharp(result.data).raw().toBuffer({ resolveWithObject: true });
  const at = (y * info.width + x) * info.channels;
  return [raw[at]!, raw[at + 1]!, raw[at + 2]!];
}

const near = (got: number[], want: number[]): void => {
  for (let i = 0; i < 3; i += 1) expect(Math.abs(got[i]! - want[i]!), `${got} vs ${want}`).toBeLessThan(14);
};

describe('BMP files are converted with their colours', () => {
  it('24 bits, bottom-up (the helper the other tests use)', async () => {
    near(await colourAt(bmp(40, 20, [10, 200, 120]), 20, 10), [10, 200, 120]);
  });

  it('8 bits with a palette: left half one entry, right half another, rows in the right order', async () => {
    const data = writeBmp({
      width: 64, height: 32, bits: 8, palette: [[250, 20, 20], [20, 20, 250], [20, 250, 20]],
      pixel: (x, y) => [y < 8 ? 2 : x < 32 ? 0 : 1],
    });
    near(await colourAt(data, 8, 20), [250, 20, 20]);
    near(await colourAt(data, 56, 20), [20, 20, 250]);
    near(await colourAt(data, 30, 2), [20, 250, 20]);
  });

  it('32 bits, top-down, with BGRA bit-field masks', async () => {
    const data = writeBmp({
      width: 40, height: 40, bits: 32, topDown: true, masks: [0x00ff0000, 0x0000ff00, 0x000000ff, 0xff000000],
      pixel: (_x, y) => (y < 20 ? [30, 60, 220, 255] : [200, 180, 10, 255]),
    });
    near(await colourAt(data, 10, 5), [220, 60, 30]);
    near(await colourAt(data, 10, 35), [10, 180, 200]);
  });

  it('16 bits, 5-6-5 masks', async () => {
    // Pure green in 5-6-5: 0x07e0, little-endian.
    const data = writeBmp({ width: 32, height: 16, bits: 16, masks: [0xf800, 0x07e0, 0x001f, 0], pixel: () => [0xe0, 0x07] });
    near(await colourAt(data, 16, 8), [0, 255, 0]);
  });
});

it('a run-length encoded BMP is refused, saying why', async () => {
  const data = writeBmp({ width: 16, height: 16, bits: 8, compression: 1, palette: [[0, 0, 0]], pixel: () => [0] });
  const result = await checkPhoto(data, { normalize: true });
  expect(result).toEqual({ ok: false, reason: 'the BMP file cannot be converted (RLE8 BMP files are not supported)' });
});
