/**
 * Duplicate names and routing (api-v2.md 4.4 Sheets 7 and 8; DESIGN.md section 5), found from the
 * source and the current listing before anything is sent, each reported per file: a name twice
 * for one member in the source, register of a name the member holds, replace of a name held in
 * two records (A0005's certificate.pdf) or held nowhere, and on the single-record sheet two files
 * for one member (both refused, as two photos of one member are) or a file of another name. Upsert sends register (POST) for new names and partial update
 * (PATCH) for held ones, counted by the emulator; files refused are never in a request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { companyOf } from '../helpers/fixtures.js';
import { state, tempDir, type EmulatorState } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import type { AttachmentImportResult } from '../../src/pipelines/attachment-import.js';
import { plain, resetStats, sha256, writeFiles } from './photo-helpers.js';
import {
  CONTRACT, QUALIFICATIONS, attachmentRequests, factsOf, importAttachments, outcomesUnder, pdf, recordsOf, startAttachmentProxy,
  type AttachmentProxy, type SentRequest,
} from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let proxy: AttachmentProxy;
let client: WdsClient;

beforeAll(async () => {
  proxy = await startAttachmentProxy(emu().url, { decode: true });
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

/** Runs the import and returns it with the requests it sent (through the proxy) and the emulator's counts. */
async function run(path: string, options: Parameters<typeof importAttachments>[2]): Promise<{ result: AttachmentImportResult; sent: SentRequest[]; counted: { register: number; update: number } }> {
  const from = proxy.sent.length;
  await resetStats(emu());
  const result = await importAttachments(client, path, options);
  const { register, update } = await attachmentRequests(emu());
  return { result, sent: proxy.sent.slice(from), counted: { register, update } };
}

const reasons = (result: AttachmentImportResult, dir: string): Record<string, string | undefined> =>
  Object.fromEntries(result.report.items.map((i) => [(i.path ?? i.key).slice(dir.length + 1), i.reason]));

const names = (sent: SentRequest[]): string[] => sent.flatMap((r) => r.files!.map((f) => `${r.method} ${f.code}/${f.file_name}`));

/** The state's attachments of every member but `codes`, to show that nothing else moved. */
const others = (s: EmulatorState, codes: string[]) => factsOf(s.attachments.filter((a) => !codes.includes(a.code)));

describe('the multiple-record sheet', () => {
  const q = { sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field };

  it('two files with one name for one member in the source: the second is refused, the first goes in', async () => {
    const dir = tempDir('wds-attachments-');
    const first = pdf(3000);
    await writeFiles(dir, {
      'first/cert.pdf': first,
      'second/cert.pdf': pdf(4000),
      'list.csv': 'code,path,file_name\nA0011,first/cert.pdf,same-name.pdf\nA0011,second/cert.pdf,same-name.pdf\n',
    });
    const { result, sent } = await run(`${dir}/list.csv`, q);
    expect(outcomesUnder(result, dir)).toEqual({ 'first/cert.pdf': 'ok', 'second/cert.pdf': 'conflict' });
    expect(reasons(result, dir)['second/cert.pdf']).toBe(
      'a second file named "same-name.pdf" for member A0011 in sheet 2 field 1306: the service refuses a name the member already holds in this file part, and cannot tell two files of one name apart to replace one',
    );
    expect(names(sent)).toEqual(['POST A0011/same-name.pdf']);
    expect((await recordsOf(emu(), q, 'A0011')).map((r) => r.file_name)).toEqual(['jlpt-n2.pdf', 'pmp.pdf', 'same-name.pdf']);
    expect((await recordsOf(emu(), q, 'A0011'))[2]!.sha256).toBe(sha256(first));
  });

  it('register (add) of a name the member already holds: conflict, nothing sent', async () => {
    const dir = await writeFiles(tempDir('wds-attachments-'), { 'A0010/aws-certification.pdf': pdf(2000) });
    const before = await recordsOf(emu(), q, 'A0010');
    const { result, sent, counted } = await run(dir, { ...q, mode: 'add' });
    expect(outcomesUnder(result, dir)).toEqual({ 'A0010/aws-certification.pdf': 'conflict' });
    expect(reasons(result, dir)['A0010/aws-certification.pdf']).toBe(
      'member A0010 already holds a file named "aws-certification.pdf" in sheet 2 field 1306; names must not repeat (use --mode replace or upsert)',
    );
    expect(sent).toEqual([]);
    expect(counted).toEqual({ register: 0, update: 0 });
    expect(await recordsOf(emu(), q, 'A0010')).toEqual(before);
  });

  it('replace, or upsert, of a name the member holds in two records (A0005, A0008 certificate.pdf): conflict, nothing sent', async () => {
    const dir = await writeFiles(tempDir('wds-attachments-'), { 'A0005/certificate.pdf': pdf(2000), 'A0008/certificate.pdf': pdf(2100) });
    const before = await state(emu());
    for (const mode of ['replace', 'upsert'] as const) {
      const { result, sent } = await run(dir, { ...q, mode });
      expect(outcomesUnder(result, dir)).toEqual({ 'A0005/certificate.pdf': 'conflict', 'A0008/certificate.pdf': 'conflict' });
      expect(reasons(result, dir)['A0005/certificate.pdf']).toBe(
        'member A0005 holds 2 records with a file named "certificate.pdf" in sheet 2 field 1306; the service cannot replace one of several files of the same name',
      );
      expect(sent).toEqual([]);
    }
    expect(await state(emu())).toEqual(before);
  });

  it('replace of a name the member does not hold: conflict, nothing sent', async () => {
    const dir = await writeFiles(tempDir('wds-attachments-'), { 'A0009/not-there.pdf': pdf(2000) });
    const { result, sent } = await run(dir, { ...q, mode: 'replace' });
    expect(outcomesUnder(result, dir)).toEqual({ 'A0009/not-there.pdf': 'conflict' });
    expect(reasons(result, dir)['A0009/not-there.pdf']).toBe(
      'member A0009 holds no file named "not-there.pdf" in sheet 2 field 1306; replace needs one (use --mode add or upsert)',
    );
    expect(sent).toEqual([]);
  });

  it('upsert: held names go to partial update (PATCH), new names to register (POST), one request each', async () => {
    const files = {
      'A0010/aws-certification.pdf': pdf(2500),
      'A0010/new-cert.pdf': pdf(2600),
      'A0003/toeic-score.png': await plain(50, 30, 9).png().toBuffer(),
      'A0013/first.csv': Buffer.from('a,b\n1,2\n'),
    };
    const dir = await writeFiles(tempDir('wds-attachments-'), files);
    const before = await state(emu());
    const a0003 = await recordsOf(emu(), q, 'A0003');
    const { result, sent, counted } = await run(dir, q);
    expect(outcomesUnder(result, dir)).toEqual({
      'A0010/aws-certification.pdf': 'ok', 'A0010/new-cert.pdf': 'ok', 'A0003/toeic-score.png': 'ok', 'A0013/first.csv': 'ok',
    });
    expect(reasons(result, dir)).toMatchObject({ 'A0010/aws-certification.pdf': 'replaced the file of the same name', 'A0010/new-cert.pdf': 'added' });
    expect(counted).toEqual({ register: 1, update: 1 });
    expect(result.requests).toEqual({ register: 1, update: 1, minimum: 2, resubmitted: 0 });
    expect(names(sent).sort()).toEqual(['PATCH A0003/toeic-score.png', 'PATCH A0010/aws-certification.pdf', 'POST A0010/new-cert.pdf', 'POST A0013/first.csv']);

    const hash = (p: keyof typeof files): string => sha256(files[p]);
    expect(await recordsOf(emu(), q, 'A0010')).toEqual([
      { file_name: 'aws-certification.pdf', sha256: hash('A0010/aws-certification.pdf'), record_index: 0 },
      { file_name: 'new-cert.pdf', sha256: hash('A0010/new-cert.pdf'), record_index: 1 },
    ]);
    // A0003's certificate.pdf stays; toeic-score.png is replaced in its own record.
    expect(await recordsOf(emu(), q, 'A0003')).toEqual([a0003[0], { ...a0003[1], sha256: hash('A0003/toeic-score.png') }]);
    // A0013 held one record without a file: the new record comes after it (the state counts only records with a file).
    expect(await recordsOf(emu(), q, 'A0013')).toEqual([{ file_name: 'first.csv', sha256: hash('A0013/first.csv'), record_index: 0 }]);
    const a0013 = companyOf(emu()).data.sheets[String(q.sheet)]!.records['A0013']!;
    expect(a0013.map((r) => r.files[String(q.field)]?.file_name ?? null)).toEqual([null, 'first.csv']);
    expect(others(await state(emu()), ['A0003', 'A0010', 'A0013'])).toEqual(others(before, ['A0003', 'A0010', 'A0013']));
  });
});

describe('the single-record sheet', () => {
  const c = { sheet: CONTRACT.sheet, field: CONTRACT.field };

  it('a file exists: adding another name is a conflict, the same name replaces it; no file yet: register; two files for one member: neither', async () => {
    const files = {
      'A0001/other-contract.pdf': pdf(3000),
      'A0003/employment-contract.pdf': pdf(3100),
      'A0005/employment-contract.pdf': pdf(3150),
      'A0005/scan.pdf': pdf(3160),
      'A0017/contract.pdf': pdf(3200),
      'A0026/contract.pdf': pdf(3300),
      'A0030/a-contract.pdf': pdf(3400),
      'A0030/b-contract.pdf': pdf(3500),
    };
    const dir = await writeFiles(tempDir('wds-attachments-'), files);
    const before = await state(emu());
    const { result, sent, counted } = await run(dir, c);
    expect(outcomesUnder(result, dir)).toEqual({
      'A0001/other-contract.pdf': 'conflict',
      'A0003/employment-contract.pdf': 'ok',
      'A0017/contract.pdf': 'ok',
      'A0005/employment-contract.pdf': 'conflict',
      'A0005/scan.pdf': 'conflict',
      'A0026/contract.pdf': 'ok',
      'A0030/a-contract.pdf': 'conflict',
      'A0030/b-contract.pdf': 'conflict',
    });
    const why = reasons(result, dir);
    expect(why['A0001/other-contract.pdf']).toBe(
      'member A0001 already holds "employment-contract.pdf" in the single-record sheet 1 field 1204; only a file of the same name can replace it',
    );
    // Two files for one member's one file: each names the other, and neither is sent.
    for (const [code, a, b] of [['A0030', 'a-contract.pdf', 'b-contract.pdf'], ['A0005', 'employment-contract.pdf', 'scan.pdf']] as const) {
      const reason = `2 files are for member ${code} in the single-record sheet 1 field 1204, which holds one file (${dir}/${code}/${a}, ${dir}/${code}/${b}); keep one`;
      expect(why[`${code}/${a}`]).toBe(reason);
      expect(why[`${code}/${b}`]).toBe(reason);
    }
    expect(why['A0003/employment-contract.pdf']).toBe('replaced the file of the same name');
    expect(counted).toEqual({ register: 1, update: 1 });
    expect(names(sent).sort()).toEqual(['PATCH A0003/employment-contract.pdf', 'POST A0017/contract.pdf', 'POST A0026/contract.pdf']);

    for (const [code, name] of [['A0003', 'employment-contract.pdf'], ['A0017', 'contract.pdf'], ['A0026', 'contract.pdf']] as const) {
      expect(await recordsOf(emu(), c, code), code).toEqual([{ file_name: name, sha256: sha256(files[`${code}/${name}` as keyof typeof files]), record_index: 0 }]);
    }
    const touched = ['A0003', 'A0017', 'A0026'];
    expect(others(await state(emu()), touched)).toEqual(others(before, touched));
  });

  it('add of the name held is a conflict; replace of it is an update', async () => {
    const replacement = pdf(2800);
    const dir = await writeFiles(tempDir('wds-attachments-'), { 'A0006/employment-contract.pdf': replacement });
    const added = await run(dir, { ...c, mode: 'add' });
    expect(outcomesUnder(added.result, dir)).toEqual({ 'A0006/employment-contract.pdf': 'conflict' });
    expect(added.sent).toEqual([]);
    const replaced = await run(dir, { ...c, mode: 'replace' });
    expect(outcomesUnder(replaced.result, dir)).toEqual({ 'A0006/employment-contract.pdf': 'ok' });
    expect(replaced.counted).toEqual({ register: 0, update: 1 });
    expect(await recordsOf(emu(), c, 'A0006')).toEqual([{ file_name: 'employment-contract.pdf', sha256: sha256(replacement), record_index: 0 }]);
  });
});
