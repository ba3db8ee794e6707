/**
 * Picking the import source for what the user named (DESIGN.md sections 4 and 5): a folder, an
 * export folder, a zip, an export zip, a CSV manifest, an export's manifest.jsonl; anything else a
 * clear error naming the path.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSource } from '../../src/sources/open-source.js';
import { FolderSource } from '../../src/sources/folder.js';
import { ZipSource } from '../../src/sources/zip.js';
import { CsvSource } from '../../src/sources/csv.js';
import { ExportFolderSource, ExportZipSource } from '../../src/sources/export-tree.js';
import { formatLine, type ManifestLine } from '../../src/sinks/manifest.js';
import type { ImportSource } from '../../src/sources/source.js';
import { tempDir } from '../helpers/export.js';
import { archiverZip, collect } from './helpers.js';

const photo = Buffer.from('photo bytes');
const manifest: ManifestLine = {
  kind: 'photo', code: 'A0001', sheet_id: null, custom_field_id: null, record_index: null, file_name: 'original name.jpg',
  path: 'photos/A0001.jpg', size: photo.length, sha256: createHash('sha256').update(photo).digest('hex'), updated_at: '2026-04-01 10:00:00',
};

async function opened(path: string, options = {}): Promise<{ source: ImportSource; names: string[] }> {
  const source = await openSource(path, options);
  const got = await collect(source);
  await source.close();
  return { source, names: got.files.map((f) => f.fileName) };
}

describe('openSource', () => {
  it('a folder is a folder source; with manifest.jsonl it is an export (the manifest names the files)', async () => {
    const dir = tempDir('wds-open-');
    mkdirSync(join(dir, 'photos'));
    writeFileSync(join(dir, 'photos/A0001.jpg'), photo);
    const plain = await opened(dir);
    expect(plain.source).toBeInstanceOf(FolderSource);
    expect(plain.names).toEqual(['A0001.jpg']);
    writeFileSync(join(dir, 'manifest.jsonl'), formatLine(manifest));
    const restore = await opened(dir);
    expect(restore.source).toBeInstanceOf(ExportFolderSource);
    expect(restore.names).toEqual(['original name.jpg']);
    // The manifest itself names the same export.
    const byManifest = await opened(join(dir, 'manifest.jsonl'));
    expect(byManifest.source).toBeInstanceOf(ExportFolderSource);
    expect(byManifest.names).toEqual(['original name.jpg']);
  });

  it('a .zip is a zip source; with manifest.jsonl at its root it is an export zip', async () => {
    const dir = tempDir('wds-open-');
    const plainZip = join(dir, 'plain.ZIP');
    await archiverZip(plainZip, [{ name: 'photos/A0001.jpg', data: photo }]);
    const plain = await opened(plainZip);
    expect(plain.source).toBeInstanceOf(ZipSource);
    expect(plain.names).toEqual(['A0001.jpg']);
    const exportZip = join(dir, 'export.zip');
    await archiverZip(exportZip, [{ name: 'photos/A0001.jpg', data: photo }, { name: 'manifest.jsonl', data: formatLine(manifest) }]);
    const restore = await opened(exportZip);
    expect(restore.source).toBeInstanceOf(ExportZipSource);
    expect(restore.names).toEqual(['original name.jpg']);
  });

  it('passes the entry cap to zips', async () => {
    const dir = tempDir('wds-open-');
    const zip = join(dir, 'plain.zip');
    await archiverZip(zip, [{ name: 'A0001.jpg', data: photo }]);
    const source = await openSource(zip, { maxEntryBytes: 5 });
    const got = await collect(source);
    await source.close();
    expect(got.refused.map((r) => r.reason)).toEqual([`declares ${photo.length} bytes uncompressed, over the limit of 5 bytes; not inflated`]);
  });

  it('a .csv is a CSV manifest', async () => {
    const dir = tempDir('wds-open-');
    writeFileSync(join(dir, 'A0001.jpg'), photo);
    writeFileSync(join(dir, 'list.csv'), 'A0001,A0001.jpg,renamed.jpg\n');
    const csv = await opened(join(dir, 'list.csv'));
    expect(csv.source).toBeInstanceOf(CsvSource);
    expect(csv.names).toEqual(['renamed.jpg']);
  });

  it('anything else is an error naming the path', async () => {
    const dir = tempDir('wds-open-');
    writeFileSync(join(dir, 'A0001.jpg'), photo);
    await expect(openSource(join(dir, 'A0001.jpg'))).rejects.toThrow(`${join(dir, 'A0001.jpg')}: cannot import from this file; give a folder, a .zip, a .csv manifest`);
    await expect(openSource(join(dir, 'missing'))).rejects.toThrow(`${join(dir, 'missing')}: no such file or folder`);
    writeFileSync(join(dir, 'broken.zip'), 'PK not really');
    await expect(openSource(join(dir, 'broken.zip'))).rejects.toThrow(`${join(dir, 'broken.zip')}: not a readable zip`);
  });
});
