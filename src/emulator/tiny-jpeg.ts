/**
 * A small synchronous baseline JPEG encoder for flat 8x8 blocks (DC coefficients only), for the
 * photos of generated companies. Synchronous and free of sharp on purpose: a generated blob is
 * produced on every download, also after `--state-dir` restored the company without running its
 * seed, and the bytes stay the same on every machine whatever libvips version is installed.
 *
 * The encoding is plain ITU T.81 baseline: one quantisation table, the standard luminance DC
 * Huffman table of Annex K, and an AC table holding only end-of-block (every AC coefficient is 0).
 */

/** Colour of one 8x8 block, 0-255 each. */
export type Rgb = readonly [number, number, number];

/** Annex K.3, Table K.3: code length counts (1..16 bits) and values of the luminance DC table. */
const DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_VALUES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
/** The DC quantiser: DC = 8 x (mean - 128), so 8 keeps one step per grey level. */
const DC_QUANT = 8;

/** Canonical Huffman codes of a table given as counts per length (T.81 Annex C). */
function huffmanCodes(bits: number[], values: number[]): Map<number, { code: number; length: number }> {
  const codes = new Map<number, { code: number; length: number }>();
  let code = 0;
  let k = 0;
  for (let length = 1; length <= 16; length += 1) {
    for (let i = 0; i < bits[length - 1]!; i += 1) {
      codes.set(values[k]!, { code, length });
      code += 1;
      k += 1;
    }
    code <<= 1;
  }
  return codes;
}

const DC_CODES = huffmanCodes(DC_BITS, DC_VALUES);

class BitWriter {
  private readonly bytes: number[] = [];
  private acc = 0;
  private count = 0;

  write(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i -= 1) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      this.count += 1;
      if (this.count === 8) this.emit();
    }
  }

  private emit(): void {
    this.bytes.push(this.acc);
    // A 0xFF in entropy-coded data is followed by a stuffed zero byte (T.81 F.1.2.3).
    if (this.acc === 0xff) this.bytes.push(0);
    this.acc = 0;
    this.count = 0;
  }

  /** Pads the last byte with 1 bits (T.81 F.1.2.3) and returns the data. */
  finish(): number[] {
    if (this.count > 0) this.write((1 << (8 - this.count)) - 1, 8 - this.count);
    return this.bytes;
  }
}

function segment(marker: number, payload: number[]): number[] {
  const length = payload.length + 2;
  return [0xff, marker, length >> 8, length & 0xff, ...payload];
}

function toYCbCr([r, g, b]: Rgb): [number, number, number] {
  return [
    0.299 * r + 0.587 * g + 0.114 * b,
    -0.168736 * r - 0.331264 * g + 0.5 * b + 128,
    0.5 * r - 0.418688 * g - 0.081312 * b + 128,
  ];
}

/** The magnitude category of a DC difference and its extra bits (T.81 F.1.2.1). */
function category(diff: number): { size: number; bits: number } {
  const magnitude = Math.abs(diff);
  const size = magnitude === 0 ? 0 : Math.floor(Math.log2(magnitude)) + 1;
  const bits = diff >= 0 ? diff : diff + (1 << size) - 1;
  return { size, bits };
}

/**
 * Encodes an image of `width` x `height` pixels whose every 8x8 block has the colour
 * `blockColour(column, row)`.
 */
export function encodeBlockJpeg(width: number, height: number, blockColour: (column: number, row: number) => Rgb): Buffer {
  const columns = Math.ceil(width / 8);
  const rows = Math.ceil(height / 8);
  const jfif = [0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0];
  // Table 0 serves all three components; only its DC entry matters here.
  const quant = [0x00, DC_QUANT, ...new Array<number>(63).fill(16)];
  const frame = [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0];
  const dcTable = [0x00, ...DC_BITS, ...DC_VALUES];
  // One symbol, end-of-block (0x00), coded as the single bit 0.
  const acTable = [0x10, 1, ...new Array<number>(15).fill(0), 0x00];
  const scan = [3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0];

  const bits = new BitWriter();
  const previous = [0, 0, 0];
  for (let row = 0; row < rows; row += 1) {
    for (let column = 0; column < columns; column += 1) {
      const ycc = toYCbCr(blockColour(column, row));
      for (let c = 0; c < 3; c += 1) {
        const dc = Math.max(-1023, Math.min(1023, Math.round((8 * (ycc[c]! - 128)) / DC_QUANT)));
        const { size, bits: extra } = category(dc - previous[c]!);
        previous[c] = dc;
        const code = DC_CODES.get(size)!;
        bits.write(code.code, code.length);
        if (size > 0) bits.write(extra, size);
        bits.write(0, 1);
      }
    }
  }
  return Buffer.from([
    0xff, 0xd8,
    ...segment(0xe0, jfif),
    ...segment(0xdb, quant),
    ...segment(0xc0, frame),
    ...segment(0xc4, dcTable),
    ...segment(0xc4, acTable),
    ...segment(0xda, scan),
    ...bits.finish(),
    0xff, 0xd9,
  ]);
}
