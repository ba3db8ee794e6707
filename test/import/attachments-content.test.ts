/**
 * The bytes of an attachment may be any variant of the format its extension names (api-v2.md 4.4
 * Sheets 9 lists the extensions; DESIGN.md section 5 has the bytes checked): a macro-enabled
 * workbook (.xlsm, and either workbook under the other's name), a UTF-16 CSV or text with its byte
 * order mark (file-type takes FF FE for MPEG audio), XML in a .txt, an animated PNG in a .png. Bytes
 * of another kind are still refused, naming what they are: a program named .pdf or .xlsm, a
 * workbook named .docx, MPEG audio named .csv. Run through the attachment import against the
 * emulator, which stores what was sent.
 */
import { fileTypeFromBuffer } from 'file-type';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import type { AttachmentImportResult } from '../../src/pipelines/attachment-import.js';
import { plain, sha256, writeFiles } from './photo-helpers.js';
import { QUALIFICATIONS, exe, importAttachments, outcomesUnder, recordsOf, sentNames, startAttachmentProxy, type AttachmentProxy } from './attachment-helpers.js';
import { mpegAudio, workbook } from './attachment-files.js';
import { apng } from './image-files.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

const utf16le = (text: string): Buffer => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
const utf16be = (text: string): Buffer => Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()]);

let proxy: AttachmentProxy;
let client: WdsClient;
let dir: string;
let files: Record<string, Buffer>;
let result: AttachmentImportResult;

const reasonOf = (path: string): string | undefined => result.report.items.find((i) => i.path === `${dir}/${path}`)?.reason;

beforeAll(async () => {
  proxy = await startAttachmentProxy(emu().url, { decode: true });
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
  dir = tempDir('wds-attachments-');
  files = {
    'A0001/budget.xlsm': await workbook(true),
    'A0001/no-macros.xlsm': await workbook(false),
    'A0001/macros.xlsx': await workbook(true),
    'A0002/scores.csv': utf16le('氏名,点数\r\n山田,91\r\n'),
    'A0002/memo.txt': utf16be('メモ\r\n'),
    'A0002/order.txt': Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<order id="7"/>\n'),
    'A0002/chart.png': apng(await plain(60, 40, 2).png().toBuffer()),
    'A0003/setup.pdf': exe(),
    'A0003/tool.xlsm': exe(),
    'A0003/budget.docx': await workbook(false),
    'A0003/song.csv': mpegAudio(40),
  };
  await writeFiles(dir, files);
  result = await importAttachments(client, dir, QUALIFICATIONS);
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

it('the files are what their names say they are: file-type detects the variants (and MPEG audio in the UTF-16 CSV)', async () => {
  const ext = async (name: string): Promise<string | undefined> => (await fileTypeFromBuffer(files[name]!))?.ext;
  expect(await ext('A0001/budget.xlsm')).toBe('xlsm');
  expect(await ext('A0001/no-macros.xlsm')).toBe('xlsx');
  expect(await ext('A0002/chart.png')).toBe('apng');
  expect(await ext('A0002/order.txt')).toBe('xml');
  expect(await fileTypeFromBuffer(files['A0002/scores.csv']!)).toMatchObject({ mime: 'audio/mpeg' });
  expect(await fileTypeFromBuffer(files['A0003/song.csv']!)).toMatchObject({ mime: 'audio/mpeg' });
});

describe('variants of the named format go in', () => {
  it('every file has its outcome', () => {
    expect(outcomesUnder(result, dir)).toEqual({
      'A0001/budget.xlsm': 'ok', 'A0001/no-macros.xlsm': 'ok', 'A0001/macros.xlsx': 'ok',
      'A0002/scores.csv': 'ok', 'A0002/memo.txt': 'ok', 'A0002/order.txt': 'ok', 'A0002/chart.png': 'ok',
      'A0003/setup.pdf': 'invalid', 'A0003/tool.xlsm': 'invalid', 'A0003/budget.docx': 'invalid', 'A0003/song.csv': 'invalid',
    });
  });

  it('they were sent and stored byte for byte', async () => {
    expect(sentNames(proxy).sort()).toEqual([
      'POST A0001/budget.xlsm', 'POST A0001/macros.xlsx', 'POST A0001/no-macros.xlsm',
      'POST A0002/chart.png', 'POST A0002/memo.txt', 'POST A0002/order.txt', 'POST A0002/scores.csv',
    ]);
    for (const code of ['A0001', 'A0002']) {
      const stored = (await recordsOf(emu(), QUALIFICATIONS, code)).filter((r) => files[`${code}/${r.file_name}`]);
      const mine = Object.keys(files).filter((p) => p.startsWith(`${code}/`));
      expect(stored.map((r) => [r.file_name, r.sha256]).sort(), code).toEqual(mine.map((p) => [p.slice(6), sha256(files[p]!)]).sort());
    }
  });
});

describe('bytes of another kind are refused, with what they are', () => {
  it.each([
    ['A0003/setup.pdf', 'the name says .pdf but the bytes are application/x-msdownload (.exe)'],
    ['A0003/tool.xlsm', 'the name says .xlsm but the bytes are application/x-msdownload (.exe)'],
    ['A0003/budget.docx', 'the name says .docx but the bytes are application/vnd.openxmlformats-officedocument.spreadsheetml.sheet (.xlsx)'],
    ['A0003/song.csv', 'the name says .csv but the bytes are audio/mpeg (.mp1)'],
  ])('%s', (path, reason) => {
    expect(reasonOf(path)).toBe(reason);
    expect(sentNames(proxy)).not.toContain(`POST ${path}`);
  });
});
