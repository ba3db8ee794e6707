/**
 * Real attachment files made in memory, for tests and bench/import (no test runner needed): PDFs
 * of an exact size, a Windows program to rename, Excel workbooks, and MPEG audio.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { ZipArchive } from 'archiver';

/**
 * A well-formed PDF of exactly `size` bytes: catalog, page tree, one page, and a stream object
 * holding `size` minus the structure in random bytes (so that it neither compresses nor repeats),
 * with a cross-reference table whose offsets are right and `%%EOF` at the end.
 */
export function pdf(size: number): Buffer {
  const head = '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n';
  const objects = [
    '1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n',
    '2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n',
    '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /PieceInfo 4 0 R >>\nendobj\n',
  ];
  const build = (length: number, payload: Buffer | null): Buffer => {
    const parts: Buffer[] = [Buffer.from(head, 'latin1')];
    const offsets: number[] = [];
    let at = parts[0]!.length;
    for (const o of objects) {
      offsets.push(at);
      parts.push(Buffer.from(o, 'latin1'));
      at += o.length;
    }
    offsets.push(at);
    const open = Buffer.from(`4 0 obj\n<< /Length ${length} >>\nstream\n`, 'latin1');
    const close = Buffer.from('\nendstream\nendobj\n', 'latin1');
    parts.push(open, payload ?? Buffer.alloc(length), close);
    at += open.length + length + close.length;
    const xref = ['xref\n0 5\n0000000000 65535 f \n', ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`)].join('');
    parts.push(Buffer.from(`${xref}trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`, 'latin1'));
    return Buffer.concat(parts);
  };
  // The structure's length depends on the digits of the lengths in it: settle it, then fill.
  let length = Math.max(0, size - build(0, null).length);
  for (let i = 0; i < 4; i += 1) length = Math.max(0, length + size - build(length, null).length);
  const out = build(length, randomBytes(length));
  if (out.length !== size) throw new Error(`a PDF of ${size} bytes cannot be made (smallest ${build(0, null).length})`);
  return out;
}

/** A Windows program (MZ header, PE signature at e_lfanew): what a renamed executable holds. */
export function exe(): Buffer {
  const data = Buffer.alloc(512);
  data.write('MZ', 0, 'latin1');
  data.writeUInt32LE(0x80, 0x3c);
  data.write('This program cannot be run in DOS mode.', 0x4e, 'latin1');
  data.write('PE\0\0', 0x80, 'latin1');
  data.writeUInt16LE(0x8664, 0x84);
  return data;
}

/**
 * The smallest workbook Excel opens: one sheet holding one number, zipped by archiver as Office
 * zips its parts. Macro-enabled (.xlsm) differs from .xlsx only by its main part's content type;
 * Excel saves a workbook without macros that way too, so no VBA project is needed.
 */
export async function workbook(macroEnabled: boolean): Promise<Buffer> {
  const main = macroEnabled ? 'application/vnd.ms-excel.sheet.macroEnabled.main+xml' : 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml';
  const parts: [string, string][] = [
    ['[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
      + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
      + `<Override PartName="/xl/workbook.xml" ContentType="${main}"/>`
      + '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>'],
    ['_rels/.rels', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
      + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>'],
    ['xl/workbook.xml', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
      + '<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'],
    ['xl/_rels/workbook.xml.rels', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
      + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>'],
    ['xl/worksheets/sheet1.xml', '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
      + '<sheetData><row r="1"><c r="A1"><v>42</v></c></row></sheetData></worksheet>'],
  ];
  const archive = new ZipArchive({ zlib: { level: 6 } });
  const zipped = buffer(archive.pipe(new PassThrough()));
  for (const [name, text] of parts) archive.append(text, { name });
  await archive.finalize();
  return zipped;
}

/** MPEG audio's CRC-16: polynomial 0x8005, starting at 0xFFFF, most significant bit first. */
function mpegCrc(bytes: number[]): number {
  let crc = 0xffff;
  for (const byte of bytes) {
    for (let bit = 7; bit >= 0; bit -= 1) {
      const carry = (crc >> 15) ^ ((byte >> bit) & 1);
      crc = (crc << 1) & 0xffff;
      if (carry) crc ^= 0x8005;
    }
  }
  return crc;
}

/**
 * MPEG-1 Layer I audio of `frames` silent frames, 32 kbit/s at 44.1 kHz, mono: each frame a
 * header FF FE 10 C0 (FF FE: sync, MPEG-1, Layer I, protected by a CRC), the CRC of the header's
 * last two bytes and the bit allocation, and a bit allocation of 0 for all 32 subbands (silence).
 * Its first two bytes are those of a UTF-16 little-endian byte order mark.
 */
export function mpegAudio(frames: number): Buffer {
  // Layer I frame length: 4 * floor(12 * bitrate / sample rate) bytes.
  const frame = Buffer.alloc(4 * Math.floor((12 * 32_000) / 44_100));
  frame.set([0xff, 0xfe, 0x10, 0xc0]);
  frame.writeUInt16BE(mpegCrc([0x10, 0xc0, ...Buffer.alloc(16)]), 4);
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}
