/**
 * An export made by wds-files as an import source (DESIGN.md section 4): a generated company
 * exported to a folder and to a zip reads back file by file as its manifest says (code, original
 * name, sheet, field, record index, size, sha256), in the manifest's order; lines whose file is
 * missing, a link, or differs from the manifest are refused with the reason; other files ignored.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { expectedFiles, identity, state, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { ExportFolderSource, ExportZipSource } from '../../src/sources/export-tree.js';
import { formatLine, sortLines, type ManifestLine } from '../../src/sinks/manifest.js';
import type { ImportSource, SourceFile } from '../../src/sources/source.js';
import { archiverZip, collect, type ArchiverEntry } from './helpers.js';

const emu = useEmulator({ generate: { members: 20 } });
const api = useClient(emu);

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const manifestOf = (dir: string): ManifestLine[] =>
  readFileSync(join(dir, 'manifest.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ManifestLine).filter((l) => (l.kind as string) !== 'source');

/** What a source file says of itself, in the manifest's words, with the sha256 of what it reads. */
type LineFields = Pick<ManifestLine, 'code' | 'sheet_id' | 'custom_field_id' | 'record_index' | 'file_name' | 'path' | 'size' | 'sha256'>;

async function asLine(file: SourceFile): Promise<LineFields> {
  const data = await file.read(10 * 1024 * 1024);
  return {
    code: file.code!, sheet_id: file.sheetId ?? null, custom_field_id: file.fieldId ?? null, record_index: file.recordIndex ?? null,
    file_name: file.fileName, path: file.relPath, size: file.size, sha256: sha256(data),
  };
}

const withoutKind = ({ code, sheet_id, custom_field_id, record_index, file_name, path, size, sha256: hash }: ManifestLine): LineFields =>
  ({ code, sheet_id, custom_field_id, record_index, file_name, path, size, sha256: hash });

async function readAll(source: ImportSource) {
  try {
    const got = await collect(source);
    return { ...got, lines: await Promise.all(got.files.map(asLine)) };
  } finally {
    await source.close();
  }
}

describe.each(['photos', 'attachments'] as const)('%s export read back', (what) => {
  const exportDirs = new Map<string, string>();
  const exported = async (): Promise<string> => {
    const cached = exportDirs.get(what);
    if (cached) return cached;
    const out = join(tempDir('wds-tree-'), 'export');
    await runExport({ client: api(), what, out, concurrency: 4 });
    exportDirs.set(what, out);
    return out;
  };

  it('from a folder: every manifest line, in its order, with what it says, byte for byte', async () => {
    const out = await exported();
    const manifest = manifestOf(out);
    expect(manifest.length).toBeGreaterThan(10);
    const got = await readAll(await ExportFolderSource.open(out));
    expect(got.refused).toEqual([]);
    expect(got.lines).toEqual(manifest.map(withoutKind));
    // And the manifest is the company's files: each identity once.
    const expected = expectedFiles(await state(emu()), what);
    expect(new Set(got.lines.map((l) => identity({ kind: what === 'photos' ? 'photo' : 'attachment', ...l })))).toEqual(new Set(expected.keys()));
    if (what === 'attachments') {
      expect(got.files.every((f) => f.sheetId !== undefined && f.fieldId !== undefined && f.recordIndex !== undefined)).toBe(true);
    } else {
      expect(got.files.every((f) => f.sheetId === undefined && f.fieldId === undefined && f.recordIndex === undefined)).toBe(true);
    }
  });

  it('from a zip made by the export: the same files, streamed', async () => {
    const dir = tempDir('wds-tree-');
    const zipPath = join(dir, `${what}.zip`);
    await runExport({ client: api(), what, out: zipPath, concurrency: 4 });
    const source = await ExportZipSource.tryOpen(zipPath);
    expect(source).not.toBeNull();
    let streamed = 0;
    const first = (await collect(source!)).files[0]!;
    for await (const chunk of await first.open()) streamed += (chunk as Buffer).length;
    expect(streamed).toBe(first.size);
    expect(first.where).toBe(`${zipPath}:${first.relPath}`);
    const got = await readAll(source!);
    expect(got.refused).toEqual([]);
    const expected = expectedFiles(await state(emu()), what);
    expect(got.lines).toHaveLength(expected.size);
    for (const line of got.lines) {
      const truth = expected.get(identity({ kind: what === 'photos' ? 'photo' : 'attachment', ...line }))!;
      expect({ file_name: line.file_name, size: line.size, sha256: line.sha256 }).toEqual({ file_name: truth.file_name, size: truth.size, sha256: truth.sha256 });
    }
    // Closed: its files can be read no more, and say so naming the file.
    await expect(first.read(first.size)).rejects.toThrow(`${first.where}: closed`);
  });

  it('a tampered export folder: missing, changed, resized and linked files and bad manifest lines refused with the reason; other files ignored', async () => {
    const out = join(tempDir('wds-tree-'), 'copy');
    cpSync(await exported(), out, { recursive: true });
    const manifest = manifestOf(out);
    const [missing, changed, resized, linked, ...rest] = manifest;
    rmSync(join(out, missing!.path));
    const bytes = readFileSync(join(out, changed!.path));
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    writeFileSync(join(out, changed!.path), bytes);
    appendFileSync(join(out, resized!.path), 'x');
    const copy = join(tempDir('wds-tree-'), 'elsewhere');
    writeFileSync(copy, readFileSync(join(out, linked!.path)));
    rmSync(join(out, linked!.path));
    symlinkSync(copy, join(out, linked!.path));
    writeFileSync(join(out, 'photos-extra.jpg'), 'not in the manifest');
    const escaping: ManifestLine = { ...rest[0]!, code: 'Z9999', path: '../outside.jpg' };
    appendFileSync(join(out, 'manifest.jsonl'), `${formatLine(escaping)}not json\n`);

    const got = await readAll(await ExportFolderSource.open(out));
    expect(got.lines).toEqual(rest.map(withoutKind));
    const refused = new Map(got.refused.map((r) => [r.relPath, r]));
    expect(refused.get(missing!.path)!.reason).toBe('missing from the export (the manifest lists it)');
    expect(refused.get(changed!.path)!.reason).toBe('sha256 differs from the manifest');
    expect(refused.get(resized!.path)!.reason).toBe(`size ${resized!.size + 1} bytes, the manifest says ${resized!.size}`);
    expect(refused.get(linked!.path)!.reason).toBe('is a link; links are not followed');
    // A path leaving the export is a problem of its manifest line, like a line that is not JSON.
    expect(got.refused.filter((r) => r.relPath === 'manifest.jsonl').map((r) => r.reason)).toEqual([
      // After the source line and the file lines.
      `manifest.jsonl line ${manifest.length + 2}: the path "../outside.jpg" goes up with ..; paths in the manifest must stay inside the export`,
      `manifest.jsonl line ${manifest.length + 3}: not JSON`,
    ]);
    expect(refused.get(missing!.path)!.where).toBe(join(out, missing!.path));
    expect(got.refused).toHaveLength(6);
  });

  it('a tampered export zip: missing, changed and linked entries refused; entries over the cap refused without inflating', async () => {
    const src = await exported();
    const manifest = manifestOf(src);
    const [missing, changed, linked, ...rest] = manifest;
    const entries: ArchiverEntry[] = [];
    for (const line of manifest) {
      if (line === missing) continue;
      if (line === linked) {
        entries.push({ name: line.path, linkTo: '/etc/passwd' });
        continue;
      }
      const data = readFileSync(join(src, line.path));
      if (line === changed) data[0] = data[0]! ^ 0xff;
      entries.push({ name: line.path, data });
    }
    entries.push({ name: 'manifest.jsonl', data: readFileSync(join(src, 'manifest.jsonl')) });
    const zipPath = join(tempDir('wds-tree-'), 'tampered.zip');
    await archiverZip(zipPath, entries);

    const got = await readAll((await ExportZipSource.tryOpen(zipPath))!);
    expect(got.lines).toEqual(rest.map(withoutKind));
    expect(got.refused.map((r) => [r.where, r.reason])).toEqual([
      [`${zipPath}:${missing!.path}`, 'missing from the export (the manifest lists it)'],
      [`${zipPath}:${changed!.path}`, 'sha256 differs from the manifest'],
      [`${zipPath}:${linked!.path}`, 'is a link; links are not followed'],
    ]);

    const capped = await readAll((await ExportZipSource.tryOpen(zipPath, { maxEntryBytes: 1000 }))!);
    expect(capped.files).toEqual([]);
    expect(capped.refused.filter((r) => r.reason.startsWith('declares '))).toHaveLength(rest.length + 1);
  });
});

describe('export trees made by hand', () => {
  function line(kind: 'photo' | 'attachment', code: string, path: string, data: Buffer, sheet?: number, field?: number, record?: number): ManifestLine {
    return {
      kind, code, sheet_id: sheet ?? null, custom_field_id: field ?? null, record_index: record ?? null,
      file_name: path.slice(path.lastIndexOf('/') + 1), path, size: data.length, sha256: sha256(data), updated_at: '2026-04-01 10:00:00',
    };
  }

  it('yields in the manifest order whatever the order of the lines: photos by code, then attachments by sheet, field, code, record', async () => {
    const dir = tempDir('wds-tree-');
    const files: [ManifestLine, Buffer][] = [];
    const add = (l: (data: Buffer) => ManifestLine, text: string): void => {
      const data = Buffer.from(text);
      files.push([l(data), data]);
    };
    add((d) => line('attachment', 'A2', 'attachments/3/30/A2/x.pdf', d, 3, 30, 0), 'a');
    add((d) => line('attachment', 'A1', 'attachments/3/30/A1/b.pdf', d, 3, 30, 1), 'b');
    add((d) => line('attachment', 'A1', 'attachments/3/30/A1/a.pdf', d, 3, 30, 0), 'c');
    add((d) => line('attachment', 'A9', 'attachments/2/20/A9/z.pdf', d, 2, 20, 0), 'd');
    add((d) => line('photo', 'B1', 'photos/B1.jpg', d), 'e');
    add((d) => line('photo', 'A1', 'photos/A1.jpg', d), 'f');
    for (const [l, data] of files) {
      mkdirSync(join(dir, l.path, '..'), { recursive: true });
      writeFileSync(join(dir, l.path), data);
    }
    writeFileSync(join(dir, 'manifest.jsonl'), files.map(([l]) => formatLine(l)).join(''));
    const got = await readAll(await ExportFolderSource.open(dir));
    expect(got.files.map((f) => f.relPath)).toEqual(sortLines(files.map(([l]) => l)).map((l) => l.path));
    expect(got.files.map((f) => f.relPath)).toEqual([
      'photos/A1.jpg', 'photos/B1.jpg', 'attachments/2/20/A9/z.pdf', 'attachments/3/30/A1/a.pdf', 'attachments/3/30/A1/b.pdf', 'attachments/3/30/A2/x.pdf',
    ]);
  });

  it('the original file_name, not the safe path; dotfiles and Thumbs.db named by the manifest are files of the export, not skipped', async () => {
    const hidden = Buffer.from('hidden');
    const thumbs = Buffer.from('thumbs');
    const renamed = Buffer.from('renamed');
    const lines = [
      line('attachment', 'A1', 'attachments/1/2/A1/.hidden.pdf', hidden, 1, 2, 0),
      line('attachment', 'A1', 'attachments/1/2/A1/Thumbs.db', thumbs, 1, 2, 1),
      { ...line('attachment', 'A1', 'attachments/1/2/A1/a_b.pdf', renamed, 1, 2, 2), file_name: 'a/b.pdf' },
    ];
    const zipPath = join(tempDir('wds-tree-'), 'hand.zip');
    await archiverZip(zipPath, [
      { name: lines[0]!.path, data: hidden }, { name: lines[1]!.path, data: thumbs }, { name: lines[2]!.path, data: renamed },
      { name: 'manifest.jsonl', data: lines.map(formatLine).join('') },
    ]);
    const got = await readAll((await ExportZipSource.tryOpen(zipPath))!);
    expect(got.refused).toEqual([]);
    expect(got.files.map((f) => [f.relPath, f.fileName])).toEqual([
      ['attachments/1/2/A1/.hidden.pdf', '.hidden.pdf'], ['attachments/1/2/A1/Thumbs.db', 'Thumbs.db'], ['attachments/1/2/A1/a_b.pdf', 'a/b.pdf'],
    ]);
  });

  it('a zip without manifest.jsonl at its root is not an export; a folder without one is a fatal error naming it', async () => {
    const zipPath = join(tempDir('wds-tree-'), 'plain.zip');
    await archiverZip(zipPath, [{ name: 'sub/manifest.jsonl', data: '' }, { name: 'A1.jpg', data: 'x' }]);
    expect(await ExportZipSource.tryOpen(zipPath)).toBeNull();
    const dir = tempDir('wds-tree-');
    await expect(ExportFolderSource.open(dir)).rejects.toThrow(`${dir}: no readable manifest.jsonl; it is not an export folder`);
  });
});
