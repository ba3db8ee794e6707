/**
 * Real attachment files made in memory, for tests and bench/import (no test runner needed): PDFs
 * of an exact size, and a Windows program to rename.
 */
import { randomBytes } from 'node:crypto';

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
