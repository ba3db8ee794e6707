/**
 * File contents of generated companies, made on demand and of an exact size: face photos (a few
 * base JPEGs plus comment segments that make each photo unique and pad it), PDFs and CSVs.
 * generate.ts registers them as blob generators, so a company of 20,000 members holds only their
 * arguments, and every download makes the bytes again (DESIGN.md section 6: benchmarks run
 * against generated companies).
 *
 * A file is made as parts (`...Parts`): its few bytes of its own, and slices of padding prepared
 * once and shared by every file. Storage writes the parts to the socket as they are, so serving a
 * file allocates next to nothing, where a whole buffer per download spent the emulator's CPU on
 * garbage collection (bench/notes.md, "Emulator storage"). The whole-file functions join the parts.
 */
import { SeededRandom } from './seeded-random.js';
import { encodeBlockJpeg, type Rgb } from './tiny-jpeg.js';

/** Printable filler, the same on every run: it pads photos, PDFs and CSVs without compressing away. */
const FILLER = (() => {
  const random = new SeededRandom(20260401);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const buffer = Buffer.allocUnsafe(65_536);
  for (let i = 0; i < buffer.length; i += 1) buffer[i] = alphabet.charCodeAt(Math.floor(random.next() * 64));
  return buffer;
})();

/**
 * A pattern repeated to 1 MiB, so `length` bytes of it repeated from its start are a few slices
 * of this one buffer: the same bytes as copying the pattern again and again.
 */
function repeated(pattern: Buffer): Buffer {
  const times = Math.max(1, Math.floor((1 << 20) / pattern.length));
  return Buffer.concat(Array.from({ length: times }, () => pattern));
}

/** Appends to `parts` `length` bytes of `pattern` repeated from its start (a `repeated` buffer). */
function pushRepeated(parts: Buffer[], pattern: Buffer, length: number): void {
  let left = length;
  while (left >= pattern.length) {
    parts.push(pattern);
    left -= pattern.length;
  }
  if (left > 0) parts.push(pattern.subarray(0, left));
}

/** The filler, repeated: `length` bytes of padding are slices of it. */
const FILLER_RUN = repeated(FILLER);

// ---------------------------------------------------------------------------------------------
// Photos

interface FaceLook {
  skin: Rgb;
  hair: Rgb;
  shirt: Rgb;
  top: Rgb;
  bottom: Rgb;
  longHair: boolean;
}

const LOOKS: FaceLook[] = [
  { skin: [241, 204, 177], hair: [35, 28, 24], shirt: [40, 60, 110], top: [200, 220, 235], bottom: [150, 180, 210], longHair: false },
  { skin: [228, 180, 145], hair: [25, 20, 18], shirt: [240, 240, 240], top: [235, 225, 205], bottom: [200, 185, 160], longHair: true },
  { skin: [200, 145, 105], hair: [70, 45, 30], shirt: [120, 30, 40], top: [210, 230, 210], bottom: [160, 195, 160], longHair: false },
  { skin: [150, 100, 70], hair: [20, 18, 18], shirt: [60, 110, 90], top: [230, 215, 230], bottom: [185, 160, 190], longHair: true },
  { skin: [235, 195, 160], hair: [165, 120, 75], shirt: [90, 90, 95], top: [190, 200, 215], bottom: [120, 135, 160], longHair: false },
  { skin: [215, 165, 125], hair: [110, 110, 115], shirt: [30, 30, 35], top: [240, 235, 220], bottom: [205, 195, 170], longHair: true },
];

const PHOTO_WIDTH = 320;
const PHOTO_HEIGHT = 400;

const shade = ([r, g, b]: Rgb, factor: number): Rgb => [r * factor, g * factor, b * factor];

const inEllipse = (x: number, y: number, cx: number, cy: number, rx: number, ry: number): boolean =>
  ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1;

function facePixel(look: FaceLook, x: number, y: number): Rgb {
  const eyeY = 190;
  for (const eyeX of [128, 192]) {
    if (inEllipse(x, y, eyeX, eyeY, 6, 6)) return [30, 25, 25];
    if (inEllipse(x, y, eyeX, eyeY, 13, 8)) return [250, 250, 250];
    if (x > eyeX - 16 && x < eyeX + 16 && y > eyeY - 24 && y < eyeY - 17) return look.hair;
  }
  if (inEllipse(x, y, 160, 250, 24, 7)) return [185, 70, 75];
  if (inEllipse(x, y, 160, 220, 7, 12)) return shade(look.skin, 0.88);
  const inFace = inEllipse(x, y, 160, 195, 80, 100);
  if (inFace && !(y < 140 && inEllipse(x, y, 160, 135, 92, 65))) return look.skin;
  if (inEllipse(x, y, 160, 135, 92, 65) && y < 150) return look.hair;
  if (look.longHair && inEllipse(x, y, 160, 200, 108, 130) && y < 300) return look.hair;
  if (inEllipse(x, y, 78, 200, 12, 22) || inEllipse(x, y, 242, 200, 12, 22)) return look.skin;
  if (x > 132 && x < 188 && y > 260 && y < 330) return shade(look.skin, 0.92);
  if (inEllipse(x, y, 160, 450, 160, 130)) return look.shirt;
  const t = y / PHOTO_HEIGHT;
  const [top, bottom] = [look.top, look.bottom];
  return [top[0] * (1 - t) + bottom[0] * t, top[1] * (1 - t) + bottom[1] * t, top[2] * (1 - t) + bottom[2] * t];
}

/** One base photo: the face drawn at block resolution, each block the mean of 4x4 samples. */
function basePhoto(look: FaceLook): Buffer {
  return encodeBlockJpeg(PHOTO_WIDTH, PHOTO_HEIGHT, (column, row) => {
    const sum = [0, 0, 0];
    for (let i = 0; i < 4; i += 1) {
      for (let j = 0; j < 4; j += 1) {
        const colour = facePixel(look, column * 8 + 1 + i * 2, row * 8 + 1 + j * 2);
        for (let c = 0; c < 3; c += 1) sum[c]! += colour[c]!;
      }
    }
    return [sum[0]! / 16, sum[1]! / 16, sum[2]! / 16];
  });
}

let bases: Buffer[] | undefined;

/** The base photos, made once per process (a few milliseconds). */
export function photoBases(): readonly Buffer[] {
  bases ??= LOOKS.map(basePhoto);
  return bases;
}

/** A JPEG comment segment holds at most 65,533 bytes after its two length bytes. */
const MAX_COMMENT_PAYLOAD = 65_533;
const COMMENT_OVERHEAD = 4;

export function photoLabel(label: string): Buffer {
  return Buffer.from(`wds-files synthetic photo ${label}\n`, 'latin1');
}

/** The smallest size a synthetic photo can have: the largest base and its identifying comment. */
export function minPhotoBytes(labelLength = 64): number {
  return Math.max(...photoBases().map((b) => b.length)) + COMMENT_OVERHEAD + photoLabel('x'.repeat(labelLength)).length;
}

/**
 * A photo of exactly `size` bytes: SOI, comment segments (the first names `label`, so every photo
 * differs; the others pad), then the rest of the base JPEG. Decoders skip comments, so it decodes
 * as the base image.
 */
export function syntheticPhoto(base: number, label: string, size: number): Buffer {
  return Buffer.concat(syntheticPhotoParts(base, label, size), size);
}

/** `syntheticPhoto` as parts, most of them shared slices of padding. */
export function syntheticPhotoParts(base: number, label: string, size: number): Buffer[] {
  const all = photoBases();
  const image = all[base % all.length]!;
  const id = photoLabel(label);
  const padding = size - image.length;
  if (padding < id.length + COMMENT_OVERHEAD) {
    throw new Error(`a synthetic photo needs at least ${image.length + id.length + COMMENT_OVERHEAD} bytes, got ${size}`);
  }
  const segments = Math.ceil(padding / (MAX_COMMENT_PAYLOAD + COMMENT_OVERHEAD));
  // SOI and the segment headers, in one small buffer that the parts slice.
  const own = Buffer.allocUnsafe(2 + segments * COMMENT_OVERHEAD);
  own[0] = 0xff;
  own[1] = 0xd8;
  const parts: Buffer[] = [own.subarray(0, 2)];
  let at = 2;
  for (let s = 0; s < segments; s += 1) {
    // Even shares; the first ones take the remainder, so each stays within a segment's limit.
    const share = Math.floor(padding / segments) + (s < padding % segments ? 1 : 0);
    const payload = share - COMMENT_OVERHEAD;
    own[at] = 0xff;
    own[at + 1] = 0xfe;
    own.writeUInt16BE(payload + 2, at + 2);
    parts.push(own.subarray(at, at + COMMENT_OVERHEAD));
    at += COMMENT_OVERHEAD;
    let written = 0;
    if (s === 0) {
      parts.push(id);
      written = id.length;
    }
    pushRepeated(parts, FILLER_RUN, payload - written);
  }
  parts.push(image.subarray(2));
  return parts;
}

// ---------------------------------------------------------------------------------------------
// PDFs

/** Text of a PDF string literal: ASCII only (the standard fonts), with \ ( ) escaped. */
function pdfText(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').replace(/[\\()]/g, (c) => `\\${c}`);
}

const PDF_HEADER = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';

/** The objects of a one-page PDF showing `lines`, each ending with a newline. */
function pdfObjects(lines: string[]): string[] {
  const content = ['BT', '/F1 16 Tf', '72 770 Td', '20 TL'];
  for (const line of lines) content.push(`(${pdfText(line)}) Tj T*`);
  content.push('ET');
  const stream = content.join('\n');
  return [
    '1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n',
    '2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n',
    '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>\nendobj\n',
    '4 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n',
    `5 0 obj\n<< /Length ${stream.length} >>\nstream\n${stream}\nendstream\nendobj\n`,
  ];
}

function xrefAndTrailer(offsets: number[], xrefAt: number, trailerSpaces = 0): string {
  const rows = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  return `xref\n0 ${offsets.length + 1}\n0000000000 65535 f \n${rows}trailer\n<< /Size ${offsets.length + 1} /Root 1 0 R${' '.repeat(trailerSpaces + 1)}>>\nstartxref\n${xrefAt}\n%%EOF\n`;
}

/** A valid one-page PDF showing `lines` (ASCII), without padding. */
export function pdfDocument(lines: string[]): Buffer {
  const objects = pdfObjects(lines);
  const offsets: number[] = [];
  let text = PDF_HEADER;
  for (const object of objects) {
    offsets.push(Buffer.byteLength(text, 'latin1'));
    text += object;
  }
  text += xrefAndTrailer(offsets, Buffer.byteLength(text, 'latin1'));
  return Buffer.from(text, 'latin1');
}

/**
 * A valid PDF of exactly `size` bytes: the page of `lines`, then an unreferenced stream object
 * holding the padding. The padding length changes the digits of its own `/Length` and of
 * `startxref`, so it is found by a few steps; a space inside the object's dictionary bridges the
 * sizes that digit changes skip. Where `startxref` itself gains a digit, nothing before the xref
 * can bridge the size skipped, so a space in the trailer's dictionary (after it) does.
 */
export function syntheticPdf(lines: string[], size: number): Buffer {
  return Buffer.concat(syntheticPdfParts(lines, size), size);
}

/** `syntheticPdf` as parts: its text before and after the padding, and slices of padding. */
export function syntheticPdfParts(lines: string[], size: number): Buffer[] {
  const objects = pdfObjects(lines);
  const offsets: number[] = [];
  let head = PDF_HEADER;
  for (const object of objects) {
    offsets.push(Buffer.byteLength(head, 'latin1'));
    head += object;
  }
  const headLength = Buffer.byteLength(head, 'latin1');
  offsets.push(headLength);
  const opening = (length: number, spaces: number): string => `6 0 obj\n<< /Length ${length}${' '.repeat(spaces + 1)}>>\nstream\n`;
  const closing = '\nendstream\nendobj\n';
  for (let trailerSpaces = 0; trailerSpaces < 2; trailerSpaces += 1) {
    const total = (length: number, spaces: number): number => {
      const xrefAt = headLength + opening(length, spaces).length + length + closing.length;
      return xrefAt + xrefAndTrailer(offsets, xrefAt, trailerSpaces).length;
    };
    for (let spaces = 0; spaces < 4; spaces += 1) {
      let length = Math.max(0, size - total(0, spaces));
      for (let step = 0; step < 4 && total(length, spaces) !== size; step += 1) length = Math.max(0, length + size - total(length, spaces));
      if (total(length, spaces) !== size) continue;
      const before = Buffer.from(head + opening(length, spaces), 'latin1');
      const xrefAt = before.length + length + closing.length;
      const parts = [before];
      pushRepeated(parts, FILLER_RUN, length);
      parts.push(Buffer.from(closing + xrefAndTrailer(offsets, xrefAt, trailerSpaces), 'latin1'));
      return parts;
    }
  }
  const total = headLength + opening(0, 0).length + closing.length;
  throw new Error(`a PDF of these lines needs at least ${total + xrefAndTrailer(offsets, total).length} bytes, got ${size}`);
}

// ---------------------------------------------------------------------------------------------
// CSVs

const CSV_HEADER = 'no,item,date,amount\n';
const CSV_ROW_LENGTH = 48;

/** Fixed-width rows (48 bytes each), made once and repeated to pad a CSV. */
const CSV_ROWS = (() => {
  const random = new SeededRandom(7);
  const items = ['Training hours', 'Course fee', 'Exam fee', 'Travel', 'Books', 'Seminar'];
  const rows: string[] = [];
  for (let n = 2; n <= 1366; n += 1) {
    const item = random.pick(items);
    const rest = `,${random.date(2015, 2025)},${random.int(100, 99_999)}\n`;
    // The item is quoted and padded with spaces inside the quotes, so every row has one length.
    const open = `${n},"${item}`;
    rows.push(`${open}${' '.repeat(CSV_ROW_LENGTH - open.length - 1 - rest.length)}"${rest}`);
  }
  return Buffer.from(rows.join(''), 'latin1');
})();

/** The rows repeated: the padding rows of a CSV are slices of it. */
const CSV_ROWS_RUN = repeated(CSV_ROWS);

/**
 * A CSV of exactly `size` bytes: a header, a first row naming `title` (its item padded with spaces
 * inside the quotes to take up the remainder), then repeated fixed-width rows.
 */
export function syntheticCsv(title: string, size: number): Buffer {
  return Buffer.concat(syntheticCsvParts(title, size), size);
}

/** `syntheticCsv` as parts: the header and first row, and slices of the repeated rows. */
export function syntheticCsvParts(title: string, size: number): Buffer[] {
  const firstRow = (pad: number): string => `1,"${title.replace(/"/g, '""')}${' '.repeat(pad)}",2025-04-01,0\n`;
  const fixed = CSV_HEADER.length + Buffer.byteLength(firstRow(0), 'utf8');
  if (size < fixed) throw new Error(`a CSV titled "${title}" needs at least ${fixed} bytes, got ${size}`);
  const rows = Math.floor((size - fixed) / CSV_ROW_LENGTH);
  const remainder = size - fixed - rows * CSV_ROW_LENGTH;
  const parts = [Buffer.from(CSV_HEADER + firstRow(remainder), 'utf8')];
  pushRepeated(parts, CSV_ROWS_RUN, rows * CSV_ROW_LENGTH);
  return parts;
}
