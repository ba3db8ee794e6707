/**
 * An attachment export of a list of sheets (a pipeline file's `from.sheets`): a company of three
 * sheets with file parts, of which the pipeline names two; the archive holds the files of those
 * two, every one of them, and none of the third. A field named with two sheets is refused at its
 * line, and `validate --online` names a sheet the service lacks at its place in the list.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineFile } from '../../src/pipeline-files/load.js';
import { runPipelineFile } from '../../src/pipeline-files/run.js';
import { validatePipelineFiles } from '../../src/pipeline-files/validate.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';

interface SeedField { id: number; kind?: string }
interface SeedSheet { id: number; name: string; record_type?: string; fields: SeedField[]; member_data: { code: string; records: { custom_fields: { id: number }[] }[] }[] }

/** The sample company with a third sheet of files: the contract sheet's file part again, as sheet 3 (field 1404). */
async function threeSheetCompany(): Promise<string> {
  const dir = join(tempDir('wds-sheets-company-'), 'company');
  await cp('samples/company', dir, { recursive: true });
  const company = JSON.parse(await readFile(join(dir, 'company.json'), 'utf8')) as { sheets: SeedSheet[] };
  const contract = company.sheets.find((sheet) => sheet.id === 1)!;
  const filePart = contract.fields.find((field) => field.kind === 'attach_file')!;
  company.sheets.push({
    id: 3, name: 'Scans', record_type: contract.record_type, fields: [{ ...filePart, id: 1404 }],
    member_data: contract.member_data.slice(0, 10).map((member) => ({
      code: member.code,
      records: member.records.map((record) => ({ custom_fields: record.custom_fields.filter((f) => f.id === filePart.id).map((f) => ({ ...f, id: 1404 })) })),
    })),
  } as SeedSheet);
  await writeFile(join(dir, 'company.json'), JSON.stringify(company));
  return dir;
}

const KEY = 'sheets-key';
const SECRET = 'sheets-secret-7a3e';
const seed = await threeSheetCompany();
const emu = useEmulator({ seed, consumerKey: KEY, consumerSecret: SECRET });

async function pipeline(lines: string[]): Promise<string> {
  const file = join(tempDir('wds-sheets-'), 'pipeline.yaml');
  await writeFile(file, [...lines, 'connection:', `  base_url: ${emu().url}`, `  consumer_key: ${KEY}`, '  consumer_secret: ${TEST_SECRET}', ''].join('\n'));
  return file;
}

interface StateFile { sheet_id: number; custom_field_id: number; code: string; file_name: string; sha256: string }

describe('an attachment export of a list of sheets', () => {
  it('archives the files of the two sheets named, every one, and none of the third', async () => {
    const state = (await emu().control('GET', '/state')) as { attachments: StateFile[] };
    const bySheet = (sheet: number): StateFile[] => state.attachments.filter((file) => file.sheet_id === sheet);
    expect(bySheet(1).length).toBeGreaterThan(0);
    expect(bySheet(2).length).toBeGreaterThan(0);
    expect(bySheet(3).length).toBeGreaterThan(0);

    const file = await pipeline(['name: two-sheets', 'from: { service: attachments, sheets: [3, 2] }', 'to: { archive: archive }']);
    const summary = await runPipelineFile(await loadPipelineFile(file, { TEST_SECRET: SECRET }));
    expect(summary).toMatchObject({ status: 'ok', exit_code: 0, files: bySheet(2).length + bySheet(3).length });
    const snapshot = join(file, '..', 'archive', 'snapshots', summary.snapshot!);
    expect((await verifyExport(snapshot)).problems).toEqual([]);
    const lines = (await readFile(join(snapshot, 'manifest.jsonl'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as StateFile & { kind: string }).filter((line) => line.kind !== 'source');
    const held = (files: StateFile[]): string[] => files.map((f) => `${f.sheet_id}/${f.custom_field_id}/${f.code}/${f.file_name}/${f.sha256}`).sort();
    expect(held(lines)).toEqual(held([...bySheet(2), ...bySheet(3)]));
  });

  it('refuses a field named with two sheets at its line, and validate --online names a missing sheet at its place in the list', async () => {
    const withField = await pipeline(['name: field-two', 'from:', '  service: attachments', '  sheets: [1, 2]', '  fields: [1204]', 'to: { folder: out }']);
    await expect(loadPipelineFile(withField, { TEST_SECRET: SECRET })).rejects.toThrow(/:5:\d+: from\.fields: a file part belongs to one sheet; name only its sheet in from\.sheets/);
    const missing = await pipeline(['name: one-missing', 'from:', '  service: attachments', '  sheets: [2, 999]', 'to: { folder: out }']);
    const { problems } = await validatePipelineFiles([missing], { online: true, env: { TEST_SECRET: SECRET } });
    expect(problems).toEqual([{ file: missing, line: 4, column: 15, message: expect.stringMatching(/^there is no sheet 999; sheets with file parts: 1 .*, 2 .*, 3 \(Scans\)$/) }]);
  });
});
