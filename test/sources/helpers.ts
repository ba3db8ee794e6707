/**
 * Making import sources in tests: zips built by archiver (what real tools write) and zips built
 * byte by byte (the quirks archiver cannot make: `../` names, Shift_JIS names, lying sizes), and
 * reading a source out whole.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';
import { ZipArchive } from 'archiver';
import type { ImportSource, RefusedFile, SourceFile } from '../../src/sources/source.js';

export interface Collected {
  files: SourceFile[];
  refused: RefusedFile[];
  /** Files and refusals in the order the source gave them: `file:<relPath>` or `refused:<relPath>`. */
  order: string[];
}

export async function collect(source: ImportSource): Promise<Collected> {
  const out: Collected = { files: [], refused: [], order: [] };
  for await (const entry of source.entries()) {
    if (entry.kind === 'file') {
      out.files.push(entry.file);
      out.order.push(`file:${entry.file.relPath}`);
    } else {
      out.refused.push(entry.refused);
      out.order.push(`refused:${entry.refused.relPath}`);
    }
  }
  return out;
}

export const byPath = (files: SourceFile[]): Map<string, SourceFile> => new Map(files.map((f) => [f.relPath, f]));

export type ArchiverEntry = { name: string; data: Buffer | string; mode?: number } | { name: string; linkTo: string };

/** A zip as archiver writes it; links with archiver's `symlink`. */
export async function archiverZip(path: string, entries: ArchiverEntry[]): Promise<void> {
  const archive = new ZipArchive({ zlib: { level: 6 } });
  const output = createWriteStream(path);
  archive.pipe(output);
  for (const entry of entries) {
    if ('linkTo' in entry) {
      (archive as unknown as { symlink(path: string, target: string, mode?: number): void }).symlink(entry.name, entry.linkTo, 0o777);
    } else {
      archive.append(entry.data, { name: entry.name, ...(entry.mode !== undefined ? { mode: entry.mode } : {}) });
    }
  }
  const closed = once(output, 'close');
  await archive.finalize();
  await closed;
}

/** One entry of a zip built byte by byte. */
export interface RawEntry {
  /** The name's bytes as stored (a string is written as UTF-8). */
  name: Buffer | string;
  /** The bytes stored: the deflated stream when `method` is 8. */
  data: Buffer;
  method?: 0 | 8;
  /** The declared uncompressed size. Default: data's length. */
  size?: number;
  /** The declared compressed size. Default: data's length. */
  compressedSize?: number;
  crc?: number;
  /** General purpose bits (0x800: the name is UTF-8; 0x1: encrypted). */
  flags?: number;
  /** Unix mode, written in the external attributes' high bits (made on Unix). */
  mode?: number;
  /** Central directory extra fields. */
  extra?: Buffer;
}

/** An entry deflated in memory, with its true size and CRC. */
export function deflated(name: Buffer | string, content: Buffer, rest: Partial<RawEntry> = {}): RawEntry {
  return { name, data: deflateRawSync(content), method: 8, size: content.length, crc: crc32(content), ...rest };
}

export function stored(name: Buffer | string, content: Buffer | string, rest: Partial<RawEntry> = {}): RawEntry {
  const data = Buffer.from(content);
  return { name, data, method: 0, crc: crc32(data), ...rest };
}

/** A zip file's bytes: local headers and data, the central directory, the end record (APPNOTE 4.3). */
export function buildZip(entries: RawEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.isBuffer(e.name) ? e.name : Buffer.from(e.name, 'utf8');
    const method = e.method ?? 0;
    const size = e.size ?? e.data.length;
    const crc = e.crc ?? crc32(e.data);
    const flags = e.flags ?? 0;
    const extra = e.extra ?? Buffer.alloc(0);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(0x5a21, 12);
    local.writeUInt32LE(crc >>> 0, 14);
    local.writeUInt32LE(e.compressedSize ?? e.data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    locals.push(local, name, e.data);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(e.mode !== undefined ? (3 << 8) | 20 : 20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(0, 12);
    central.writeUInt16LE(0x5a21, 14);
    central.writeUInt32LE(crc >>> 0, 16);
    central.writeUInt32LE(e.compressedSize ?? e.data.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt16LE(extra.length, 30);
    central.writeUInt16LE(0, 32);
    central.writeUInt16LE(0, 34);
    central.writeUInt16LE(0, 36);
    central.writeUInt32LE(e.mode !== undefined ? (e.mode << 16) >>> 0 : 0, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name, extra);
    offset += 30 + name.length + e.data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** `bytes` zeros deflated as a stream (never held whole), with their CRC: a zip bomb's payload. */
export async function deflatedZeros(bytes: number): Promise<{ data: Buffer; crc: number }> {
  const deflate = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => out.push(chunk));
  const chunk = Buffer.alloc(1024 * 1024);
  let crc = 0;
  for (let left = bytes; left > 0; left -= chunk.length) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
    crc = crc32(piece, crc);
    if (!deflate.write(piece)) await once(deflate, 'drain');
  }
  deflate.end();
  await once(deflate, 'end');
  return { data: Buffer.concat(out), crc };
}

/** `社員写真` in Shift_JIS (JIS X 0208 row/cell codes mapped by hand): what Japanese Windows writes. */
export const SHAIN_SHASHIN_SJIS = Buffer.from([0x8e, 0xd0, 0x88, 0xf5, 0x8e, 0xca, 0x90, 0x5e]);
export const SHAIN_SHASHIN = '社員写真';
