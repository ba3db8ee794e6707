/**
 * Every file the attachment import refuses before sending (DESIGN.md section 5; api-v2.md 4.4
 * Sheets 9): an extension off the list, a renamed program or a text file named .pdf, an empty
 * file, 5 MB + 1 byte (5 MB exactly goes in), an unknown member code, a file outside a `<code>/`
 * folder, a field that is not a file part. Each is reported with its reason, none of them is in a
 * request (a proxy decodes every body), the valid ones go in, and nothing else changes.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { archiverZip } from '../sources/helpers.js';
import { state, tempDir, type EmulatorState } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import type { AttachmentImportResult } from '../../src/pipelines/attachment-import.js';
import { MB5, plain, resetStats, sha256, writeFiles } from './photo-helpers.js';
import {
  QUALIFICATIONS, attachmentRequests, exe, factsOf, importAttachments, outcomesUnder, pdf, recordsOf, sentNames, startAttachmentProxy,
  type AttachmentProxy,
} from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let proxy: AttachmentProxy;
let client: WdsClient;
let dir: string;
let files: Record<string, Buffer>;
let before: EmulatorState;
let result: AttachmentImportResult;

const reasonOf = (path: string): string | undefined => result.report.items.find((i) => i.path === `${dir}/${path}`)?.reason;

beforeAll(async () => {
  proxy = await startAttachmentProxy(emu().url, { decode: true });
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
  dir = tempDir('wds-attachments-');
  const zipPath = `${tempDir('wds-zip-')}/bundle.zip`;
  await archiverZip(zipPath, [{ name: 'inside/readme.txt', data: 'a zip is an accepted attachment' }]);
  files = {
    'A0001/tool.exe': exe(),
    'A0001/script.js': Buffer.from('console.log("hello");\n'),
    'A0001/README': Buffer.from('no extension at all\n'),
    'A0001/renamed.pdf': exe(),
    'A0001/notes.pdf': Buffer.from('only text, though the name says PDF\n'),
    'A0001/empty.pdf': Buffer.alloc(0),
    'A0001/huge.exe': Buffer.concat([exe(), Buffer.alloc(MB5 + 1000)]),
    'A0001/scores.csv': Buffer.from('subject,score\nmath,91\n'),
    'A0001/scan.png': await plain(60, 40, 3).png().toBuffer(),
    'A0001/bundle.zip': await readFile(zipPath),
    'A0002/exact-5mb.pdf': pdf(MB5),
    'A0002/over-5mb.pdf': pdf(MB5 + 1),
    'Z9999/orphan.pdf': pdf(2000),
    'loose.pdf': pdf(2000),
  };
  await writeFiles(dir, files);
  before = await state(emu());
  await resetStats(emu());
  result = await importAttachments(client, dir, { sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field });
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

describe('files refused before sending', () => {
  it('every file has its outcome', () => {
    expect(outcomesUnder(result, dir)).toEqual({
      'A0001/tool.exe': 'invalid', 'A0001/script.js': 'invalid', 'A0001/README': 'invalid', 'A0001/renamed.pdf': 'invalid',
      'A0001/notes.pdf': 'invalid', 'A0001/empty.pdf': 'invalid', 'A0001/huge.exe': 'invalid',
      'A0001/scores.csv': 'ok', 'A0001/scan.png': 'ok', 'A0001/bundle.zip': 'ok',
      'A0002/exact-5mb.pdf': 'ok', 'A0002/over-5mb.pdf': 'invalid', 'Z9999/orphan.pdf': 'invalid', 'loose.pdf': 'invalid',
    });
    expect(result.report.counts).toMatchObject({ ok: 4, invalid: 10, conflict: 0, failed: 0 });
  });

  it('an extension off the list: .exe, .js and none, named with the list', () => {
    expect(reasonOf('A0001/tool.exe')).toMatch(/^the extension \.exe is not accepted for attachments \(accepted: txt, csv, .*, msg\)$/);
    expect(reasonOf('A0001/script.js')).toMatch(/^the extension \.js is not accepted for attachments/);
    expect(reasonOf('A0001/README')).toMatch(/^the extension \(none\) is not accepted for attachments/);
  });

  it('an extension off the list is the reason even when the file is also too large', () => {
    expect(reasonOf('A0001/huge.exe')).toMatch(/^the extension \.exe is not accepted for attachments/);
  });

  it('the bytes decide: a renamed program and a text file named .pdf', () => {
    expect(reasonOf('A0001/renamed.pdf')).toBe('the name says .pdf but the bytes are application/x-msdownload (.exe)');
    expect(reasonOf('A0001/notes.pdf')).toBe('the name says .pdf but the bytes are plain text');
  });

  it('an empty file, and 5 MB + 1 byte; 5 MB exactly goes in', () => {
    expect(reasonOf('A0001/empty.pdf')).toBe('the file is empty');
    expect(reasonOf('A0002/over-5mb.pdf')).toBe('5,242,881 bytes is over the 5 MB limit (5,242,880 bytes)');
    expect(reasonOf('A0002/exact-5mb.pdf')).toBe('added');
  });

  it('an unknown member code, and a file that is not in a <code>/ folder', () => {
    expect(reasonOf('Z9999/orphan.pdf')).toBe('no member has the code Z9999');
    expect(reasonOf('loose.pdf')).toBe('the member is unknown: put the file in a folder named by the member code (<code>/loose.pdf) or list it in a CSV');
  });

  it('only the valid files were sent, in one register request', async () => {
    expect(sentNames(proxy).sort()).toEqual(['POST A0001/bundle.zip', 'POST A0001/scan.png', 'POST A0001/scores.csv', 'POST A0002/exact-5mb.pdf']);
    expect(result.requests).toEqual({ register: 1, update: 0, minimum: 1, resubmitted: 0 });
    expect(await attachmentRequests(emu())).toEqual({ register: 1, update: 0, rateLimited: 0 });
  });

  it('the valid files went in byte for byte, and nothing else changed', async () => {
    const a0001 = await recordsOf(emu(), QUALIFICATIONS, 'A0001');
    expect(a0001.map((r) => [r.file_name, r.sha256])).toEqual(
      ['A0001/bundle.zip', 'A0001/scan.png', 'A0001/scores.csv'].map((p) => [p.slice(6), sha256(files[p]!)]),
    );
    const a0002 = await recordsOf(emu(), QUALIFICATIONS, 'A0002');
    expect(a0002.map((r) => [r.file_name, r.sha256])).toEqual([['exact-5mb.pdf', sha256(files['A0002/exact-5mb.pdf']!)]]);
    const after = await state(emu());
    const untouched = (list: EmulatorState['attachments']) => factsOf(list.filter((a) => (a.code !== 'A0001' && a.code !== 'A0002') || a.sheet_id !== QUALIFICATIONS.sheet));
    expect(untouched(after.attachments)).toEqual(untouched(before.attachments));
    expect(after.members).toEqual(before.members);
  });
});

describe('a field that is not a file part', () => {
  it.each([
    [QUALIFICATIONS.sheet, 1301, 'custom field 1301 of sheet 2 is not a file part (see the sheet layouts)'],
    [1, 1201, 'custom field 1201 of sheet 1 is not a file part (see the sheet layouts)'],
    [99, 1306, 'custom field 1306 of sheet 99 is not a file part (see the sheet layouts)'],
  ])('sheet %i field %i: every file refused, no request sent', async (sheet, field, reason) => {
    const good = await writeFiles(tempDir('wds-attachments-'), { 'A0003/a.pdf': pdf(1000), 'A0004/b.csv': Buffer.from('x,y\n') });
    const sentBefore = proxy.sent.length;
    const stateBefore = await state(emu());
    await resetStats(emu());
    const run = await importAttachments(client, good, { sheet, field });
    expect(outcomesUnder(run, good)).toEqual({ 'A0003/a.pdf': 'invalid', 'A0004/b.csv': 'invalid' });
    for (const item of run.report.items) expect(item.reason).toBe(reason);
    expect(proxy.sent.length).toBe(sentBefore);
    expect(run.requests).toEqual({ register: 0, update: 0, minimum: 0, resubmitted: 0 });
    expect(await attachmentRequests(emu())).toEqual({ register: 0, update: 0, rateLimited: 0 });
    expect(await state(emu())).toEqual(stateBefore);
  });
});
