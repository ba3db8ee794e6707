/**
 * Reading Windows BMP files into raw RGBA pixels for sharp, whose prebuilt libvips has no BMP
 * loader (it reads BMP only through ImageMagick, which the prebuilt build leaves out). Covers what
 * Windows, scanners and cameras write: the core, info and V4/V5 headers; 1, 4 and 8 bits with a
 * palette; 16, 24 and 32 bits, with or without bit-field masks; bottom-up and top-down rows.
 * Run-length and embedded JPEG/PNG compression are refused with the reason.
 */

export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 4;
}

/** Images larger than this many pixels are refused before any buffer is made for them. */
const MAX_PIXELS = 100_000_000;

const BI_RGB = 0;
const BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;
const COMPRESSION_NAMES: Record<number, string> = { 1: 'RLE8', 2: 'RLE4', 4: 'embedded JPEG', 5: 'embedded PNG' };

/** A channel of a bit-field mask: where it is and how to scale it to 8 bits. */
function channel(mask: number): { shift: number; max: number } {
  if (mask === 0) return { shift: 0, max: 0 };
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift += 1;
  return { shift, max: mask >>> shift };
}

export function decodeBmp(file: Buffer): RawImage {
  if (file.length < 26 || file.toString('latin1', 0, 2) !== 'BM') throw new Error('not a BMP file (no BM signature)');
  const dataOffset = file.readUInt32LE(10);
  const headerSize = file.readUInt32LE(14);
  const core = headerSize === 12;
  if (!core && headerSize < 40) throw new Error(`unknown BMP header of ${headerSize} bytes`);
  if (file.length < 14 + headerSize) throw new Error('the BMP header is cut short');
  const width = core ? file.readUInt16LE(18) : file.readInt32LE(18);
  const rawHeight = core ? file.readInt16LE(20) : file.readInt32LE(22);
  const bits = core ? file.readUInt16LE(24) : file.readUInt16LE(28);
  const compression = core ? BI_RGB : file.readUInt32LE(30);
  const topDown = rawHeight < 0;
  const height = Math.abs(rawHeight);
  if (width <= 0 || height === 0) throw new Error(`the BMP says it is ${width} x ${height} pixels`);
  if (width * height > MAX_PIXELS) throw new Error(`the BMP says it is ${width} x ${height} pixels, more than ${MAX_PIXELS}`);
  if (compression !== BI_RGB && compression !== BI_BITFIELDS && compression !== BI_ALPHABITFIELDS) {
    throw new Error(`${COMPRESSION_NAMES[compression] ?? `compression ${compression}`} BMP files are not supported`);
  }
  if (![1, 4, 8, 16, 24, 32].includes(bits)) throw new Error(`${bits}-bit BMP files are not supported`);

  // Masks: in the header (V4/V5, or after an info header for BI_BITFIELDS), else the defaults.
  let masks: [number, number, number, number];
  if (compression === BI_RGB) {
    masks = bits === 16 ? [0x7c00, 0x03e0, 0x001f, 0] : [0xff0000, 0xff00, 0xff, 0];
  } else {
    const at = 14 + 40;
    if (file.length < at + 12) throw new Error('the BMP bit-field masks are missing');
    const alpha = headerSize >= 56 || compression === BI_ALPHABITFIELDS ? file.readUInt32LE(at + 12) : 0;
    masks = [file.readUInt32LE(at), file.readUInt32LE(at + 4), file.readUInt32LE(at + 8), alpha];
  }
  const [red, green, blue, alpha] = masks.map(channel) as [ReturnType<typeof channel>, ReturnType<typeof channel>, ReturnType<typeof channel>, ReturnType<typeof channel>];

  // The palette follows the header (and the masks of an info header with BI_BITFIELDS).
  const palette: [number, number, number][] = [];
  if (bits <= 8) {
    const entrySize = core ? 3 : 4;
    const start = 14 + headerSize;
    const declared = core ? 0 : file.readUInt32LE(46);
    const count = declared || 1 << bits;
    for (let i = 0; i < count && start + i * entrySize + 2 < file.length; i += 1) {
      const p = start + i * entrySize;
      palette.push([file[p + 2]!, file[p + 1]!, file[p]!]);
    }
    if (!palette.length) throw new Error('the BMP palette is missing');
  }

  const rowBytes = Math.ceil((width * bits) / 32) * 4;
  if (dataOffset + rowBytes * height > file.length) throw new Error('the BMP pixel data is cut short');
  const out = Buffer.alloc(width * height * 4);
  const scale = (value: number, c: { shift: number; max: number }): number => (c.max ? Math.round((((value >>> c.shift) & c.max) * 255) / c.max) : 0);
  for (let row = 0; row < height; row += 1) {
    const src = dataOffset + (topDown ? row : height - 1 - row) * rowBytes;
    for (let x = 0; x < width; x += 1) {
      const o = (row * width + x) * 4;
      let r: number;
      let g: number;
      let b: number;
      let a = 255;
      if (bits <= 8) {
        const bitPos = x * bits;
        const index = (file[src + (bitPos >> 3)]! >> (8 - bits - (bitPos & 7))) & ((1 << bits) - 1);
        [r, g, b] = palette[Math.min(index, palette.length - 1)]!;
      } else if (bits === 24) {
        b = file[src + x * 3]!;
        g = file[src + x * 3 + 1]!;
        r = file[src + x * 3 + 2]!;
      } else {
        const value = bits === 16 ? file.readUInt16LE(src + x * 2) : file.readUInt32LE(src + x * 4);
        r = scale(value, red);
        g = scale(value, green);
        b = scale(value, blue);
        if (alpha.max) a = scale(value, alpha);
      }
      out[o] = r;
      out[o + 1] = g;
      out[o + 2] = b;
      out[o + 3] = a;
    }
  }
  return { data: out, width, height, channels: 4 };
}
