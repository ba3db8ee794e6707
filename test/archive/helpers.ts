/**
 * Archive tests: the company's attachments changed in the in-process emulator as another user's
 * upload would change them, the storage downloads the emulator counted, and the snapshots of an
 * archive folder read with plain fs.
 */
import { randomBytes } from 'node:crypto';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { runExport, type ExportResult } from '../../src/pipelines/export.js';
import type { WdsClient } from '../../src/index.js';
import type { TestEmulator } from '../helpers/emulator.js';
import { companyOf } from '../helpers/fixtures.js';
import type { ManifestEntry } from '../helpers/export.js';
import { pdf } from '../import/attachment-helpers.js';

export async function storageDownloads(emu: TestEmulator): Promise<number> {
  return ((await emu.control('GET', '/stats')) as { storage_downloads: number }).storage_downloads;
}

export const resetStats = (emu: TestEmulator): Promise<unknown> => emu.control('POST', '/stats/reset');

/** One archive run of the company's attachments. */
export const archiveRun = (client: WdsClient, archive: string, extra: Partial<Parameters<typeof runExport>[0]> = {}): Promise<ExportResult> =>
  runExport({ client, what: 'attachments', out: archive, archive: { pipeline: 'test-archive' }, concurrency: 8, ...extra });

/**
 * Gives `count` attachments new bytes (a later service time, so their updated_at moves on) and
 * answers them as `sheet/field/code/file_name` (`fileId` of a manifest row). The new files are of
 * `size` bytes when given, of a few KB otherwise.
 */
export async function changeAttachments(emu: TestEmulator, count: number, skipCode?: string, size?: number): Promise<string[]> {
  await emu.control('POST', '/clock', { advance_seconds: 120 });
  const company = companyOf(emu);
  const keys: string[] = [];
  for (const [sheetId, sheet] of Object.entries(company.data.sheets)) {
    for (const [code, records] of Object.entries(sheet.records).sort(([a], [b]) => (a < b ? 1 : -1))) {
      if (code === skipCode) continue;
      for (const record of records) {
        for (const [fieldId, file] of Object.entries(record.files)) {
          if (keys.length >= count) return keys;
          const bytes = size ?? 3000 + randomBytes(2).readUInt16LE(0) % 6000;
          const data = file.file_name.endsWith('.pdf') ? pdf(bytes) : Buffer.from(`changed,${randomBytes(8).toString('hex')}\n${size ? 'x'.repeat(size) : ''}`);
          record.files[fieldId] = company.storeFile(data, file.file_name, file);
          keys.push(`${sheetId}/${fieldId}/${code}/${file.file_name}`);
        }
      }
    }
  }
  return keys;
}

/** Deletes a member through the API (its files go with it). */
export async function deleteMember(emu: TestEmulator, code: string): Promise<void> {
  const { status, body } = await emu.api('POST', '/members/delete', { codes: [code] });
  if (status !== 200) throw new Error(`delete ${code}: ${status} ${JSON.stringify(body)}`);
  const task = await emu.waitTask(body.task_id);
  if (task.status !== 'OK') throw new Error(`delete ${code}: ${JSON.stringify(task)}`);
}

/** A manifest line as the archive tests read it: the same shape as an export's. */
export type ManifestRow = ManifestEntry;

export const keyOf = (l: ManifestRow): string =>
  l.kind === 'photo' ? `photo:${l.code}` : `attachment:${l.sheet_id}:${l.custom_field_id}:${l.code}:${l.record_index}:${l.file_name}`;

/** A manifest row as `changeAttachments` names files. */
export const fileId = (l: ManifestRow): string => `${l.sheet_id}/${l.custom_field_id}/${l.code}/${l.file_name}`;

export async function manifestOf(dir: string): Promise<Map<string, ManifestRow>> {
  const text = await readFile(join(dir, 'manifest.jsonl'), 'utf8');
  // A line cut short (a run killed while appending it) names no file yet.
  const rows = text.split('\n').filter(Boolean).flatMap((l) => {
    try {
      const row = JSON.parse(l) as ManifestRow;
      // The source line leads the manifest and names no file.
      return (row.kind as string) === 'source' ? [] : [row];
    } catch {
      return [];
    }
  });
  return new Map(rows.map((r) => [keyOf(r), r]));
}

/** The inode of each manifest file of a snapshot, by key. */
export async function inodesOf(dir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [key, row] of await manifestOf(dir)) out.set(key, (await stat(join(dir, row.path))).ino);
  return out;
}

export const snapshotJson = async (dir: string): Promise<any> => JSON.parse(await readFile(join(dir, 'snapshot.json'), 'utf8'));

/** The files under a snapshot folder but its manifest and the sink's temporary folder (a stopped download's bytes). */
export async function filesIn(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
    .filter((path) => path !== 'manifest.jsonl' && !path.startsWith('.wds-tmp/'))
    .sort();
}
