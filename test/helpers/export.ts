/**
 * Checking an export against the truth: `GET /_emulator/state` on one side, an export folder or
 * zip read independently of the code under test on the other (plain fs and yauzl), compared file
 * by file on identity, original name, size and sha256.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';
import { expect } from 'vitest';
import type { TestEmulator } from './emulator.js';

export interface StatePhoto {
  file_name: string;
  size: number;
  sha256: string;
  updated_at: string;
}

export interface StateAttachment extends StatePhoto {
  sheet_id: number;
  custom_field_id: number;
  code: string;
  record_index: number;
}

export interface EmulatorState {
  members: { code: string; photo: StatePhoto | null }[];
  attachments: StateAttachment[];
}

/** What the manifest says of one file (DESIGN.md section 4). */
export interface ManifestEntry {
  kind: 'photo' | 'attachment';
  code: string;
  sheet_id: number | null;
  custom_field_id: number | null;
  record_index: number | null;
  file_name: string;
  path: string;
  size: number;
  sha256: string;
  updated_at: string;
}

export interface StoredEntry {
  size: number;
  sha256: string;
  /** Zip entries: 0 stored, 8 deflated. */
  compressionMethod?: number;
  /**
   * Zip entries: what the local header (the one a streaming reader sees first) says, read from
   * the file at the entry's offset: its flags (bit 3: sizes in a data descriptor after the data),
   * CRC-32 and sizes.
   */
  local?: { flags: number; crc32: number; compressedSize: number; size: number };
  /** Zip entries: the CRC-32 of the bytes read. */
  crc32?: number;
}

export interface ExportContents {
  manifest: ManifestEntry[];
  /** Every file of the export but the manifest, by path inside the export. */
  files: Map<string, StoredEntry>;
  /** Zip entry names in the order they are stored (the manifest included); empty for folders. */
  order: string[];
  manifestCompression?: number;
}

export const state = (emu: TestEmulator): Promise<EmulatorState> => emu.control('GET', '/state') as Promise<EmulatorState>;

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** A temporary folder, in the run's own (test/global-setup.ts), which goes when the run ends. */
export function tempDir(prefix = 'wds-export-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Identity of a file independent of its name: the manifest's key fields. */
export const identity = (f: { kind?: string; code: string; sheet_id?: number | null; custom_field_id?: number | null; record_index?: number | null }): string =>
  f.kind === 'photo' || f.sheet_id === null || f.sheet_id === undefined
    ? `photo:${f.code}`
    : `attachment:${f.sheet_id}:${f.custom_field_id}:${f.code}:${f.record_index}`;

/** The files an export of `what` must hold, by identity. */
export function expectedFiles(s: EmulatorState, what: 'photos' | 'attachments'): Map<string, Omit<ManifestEntry, 'path'>> {
  const out = new Map<string, Omit<ManifestEntry, 'path'>>();
  if (what === 'photos') {
    for (const m of s.members) {
      if (!m.photo) continue;
      out.set(identity({ kind: 'photo', code: m.code }), {
        kind: 'photo', code: m.code, sheet_id: null, custom_field_id: null, record_index: null, ...m.photo,
      });
    }
    return out;
  }
  for (const a of s.attachments) out.set(identity({ kind: 'attachment', ...a }), { kind: 'attachment', ...a });
  return out;
}

/** The file lines of manifest text; its source line (`kind: "source"`, first) is not a file's. */
export const parseManifest = (text: string): ManifestEntry[] =>
  text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as ManifestEntry).filter((l) => (l.kind as string) !== 'source');

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'));
  }
  return out;
}

/** Every file under `dir` (relative, with `/`), temporary ones included. */
export const filesUnder = walk;

export async function readFolderExport(dir: string): Promise<ExportContents> {
  const manifest = parseManifest(await readFile(join(dir, 'manifest.jsonl'), 'utf8'));
  const files = new Map<string, StoredEntry>();
  for (const path of await walk(dir)) {
    if (path === 'manifest.jsonl') continue;
    const data = await readFile(join(dir, path));
    files.set(path, { size: data.length, sha256: sha256(data) });
  }
  return { manifest, files, order: [] };
}

/** Every entry of a zip with yauzl, in stored order, hashed. */
export function readZipExport(file: string): Promise<ExportContents> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: true }, (error, zip) => {
      if (error || !zip) return reject(error ?? new Error('no zip'));
      const files = new Map<string, StoredEntry>();
      const order: string[] = [];
      let manifestText = '';
      let manifestCompression: number | undefined;
      zip.on('error', reject);
      zip.on('end', () => resolve({ manifest: parseManifest(manifestText), files, order, manifestCompression }));
      zip.on('entry', (entry: yauzl.Entry) => {
        order.push(entry.fileName);
        const local = localHeader(file, entry.relativeOffsetOfLocalHeader);
        zip.openReadStream(entry, (err, stream) => {
          if (err || !stream) return reject(err ?? new Error('no stream'));
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('error', reject);
          stream.on('end', () => {
            const data = Buffer.concat(chunks);
            if (entry.fileName === 'manifest.jsonl') {
              manifestText = data.toString('utf8');
              manifestCompression = entry.compressionMethod;
            } else {
              files.set(entry.fileName, { size: data.length, sha256: sha256(data), compressionMethod: entry.compressionMethod, local, crc32: crc32(data) });
            }
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}

/** The fixed part of the local file header at `offset` (APPNOTE 4.3.7). */
function localHeader(file: string, offset: number): StoredEntry['local'] {
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(30);
    readSync(fd, header, 0, 30, offset);
    if (header.readUInt32LE(0) !== 0x04034b50) throw new Error(`no local file header at ${offset} of ${file}`);
    return { flags: header.readUInt16LE(6), crc32: header.readUInt32LE(14), compressedSize: header.readUInt32LE(18), size: header.readUInt32LE(22) };
  } finally {
    closeSync(fd);
  }
}

export const readExport = (target: string): Promise<ExportContents> =>
  target.toLowerCase().endsWith('.zip') ? readZipExport(target) : readFolderExport(target);

/**
 * The export holds exactly the company's files of `what`: one manifest line per file with its
 * identity, original name, size and sha256, and at its path a file of that size and hash; no
 * file the manifest does not name.
 */
export async function expectMatchesState(target: string, s: EmulatorState, what: 'photos' | 'attachments'): Promise<ExportContents> {
  const contents = await readExport(target);
  const expected = expectedFiles(s, what);
  const byIdentity = new Map(contents.manifest.map((line) => [identity(line), line]));
  expect(contents.manifest.length, 'one manifest line per file').toBe(byIdentity.size);
  expect([...byIdentity.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [id, want] of expected) {
    const line = byIdentity.get(id)!;
    expect({ ...line, path: undefined }, id).toEqual({ ...want, path: undefined });
    const stored = contents.files.get(line.path);
    expect(stored, `${line.path} is in the export`).toBeDefined();
    expect({ size: stored!.size, sha256: stored!.sha256 }, line.path).toEqual({ size: want.size, sha256: want.sha256 });
  }
  expect([...contents.files.keys()].sort(), 'no file outside the manifest').toEqual(contents.manifest.map((l) => l.path).sort());
  return contents;
}
