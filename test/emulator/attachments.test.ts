/**
 * Attachments, the file parts of sheets (api-v2.md 4.4 Sheets 6 to 9; wire-format.md,
 * Attachments): the listing of download URLs, register and partial update.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addMember, addSheet, b64, companyOf, field } from '../helpers/fixtures.js';
import type { SheetRecord, SheetState, StoredFile } from '../../src/emulator/model.js';
import { ATTACHMENT_EXTENSIONS } from '../../src/spec/extensions.js';
import { MAX_FILE_BYTES } from '../../src/spec/limits.js';

const emu = useEmulator({ limits: { updatesPerMinute: 100_000, requestsPerHour: 1_000_000 } });

const FILE = 501;
const TEXT = 502;
const CALC = 503;

let nextSheet = 1;
let nextMember = 1;

function arrange(recordType: 0 | 1, memberCount = 2): { id: number; codes: string[]; path: string } {
  const id = nextSheet++;
  addSheet(emu(), {
    id,
    name: `Sheet ${id}`,
    record_type: recordType,
    fields: [
      field(FILE, 'Document', 'attach_file'),
      field(TEXT, 'Title', 'text_box'),
      field(CALC, 'Constant', 'calc_formula', { formula: '1 + 2' }),
      field(504, 'Other file', 'attach_file'),
    ],
  });
  const codes = Array.from({ length: memberCount }, () => addMember(emu(), `A${String(nextMember++).padStart(4, '0')}`).code);
  return { id, codes, path: `/sheets/${id}/custom_fields/${FILE}/file` };
}

const sheetOf = (id: number): SheetState => companyOf(emu()).data.sheets[String(id)]!;
const recordsOf = (id: number, code: string): SheetRecord[] => sheetOf(id).records[code] ?? [];
const namesOf = (id: number, code: string): (string | null)[] => recordsOf(id, code).map((r) => r.files[FILE]?.file_name ?? null);
const bytesOf = (file: StoredFile | undefined): Buffer => companyOf(emu()).blobs.read(file!.blob);
const released = (file: StoredFile): boolean => companyOf(emu()).blobs.get(file.blob)?.releasedAt !== undefined;

function putFile(sheetId: number, code: string, index: number, name: string, updatedAt?: string, fieldId = FILE): StoredFile {
  const company = companyOf(emu());
  const list = (sheetOf(sheetId).records[code] ??= []);
  while (list.length <= index) list.push({ values: {}, files: {} });
  const file = company.storeFile(Buffer.from(`old ${name}`), name);
  if (updatedAt) file.updated_at = updatedAt;
  list[index]!.files[String(fieldId)] = file;
  return file;
}

const item = (file_name: string, content: string | Buffer = `content of ${file_name}`) => ({
  file_name,
  base64_content: b64(Buffer.isBuffer(content) ? content : Buffer.from(content)),
});

async function run(method: string, path: string, body: unknown, headers?: Record<string, string>) {
  const res = await emu().api(method, path, body, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return emu().waitTask(res.body.task_id as number);
}
async function ok(method: string, path: string, body: unknown): Promise<void> {
  const t = await run(method, path, body);
  expect(t.messages).toEqual([]);
  expect(t.status).toBe('OK');
}
async function ng(method: string, path: string, body: unknown): Promise<string[]> {
  const t = await run(method, path, body);
  expect(t.status).toBe('NG');
  expect(t.messages.length).toBeGreaterThan(0);
  return t.messages;
}

describe('attachment URL listing (api-v2.md 4.4 Sheets 6)', () => {
  it('lists only records that hold a file, by member code, records in stored order', async () => {
    const { id, codes, path } = arrange(1, 3);
    putFile(id, codes[1]!, 0, 'b1.pdf');
    sheetOf(id).records[codes[1]!]!.push({ values: { [TEXT]: ['no file'] }, files: {} });
    putFile(id, codes[1]!, 2, 'b3.pdf');
    putFile(id, codes[0]!, 0, 'a1.pdf');
    sheetOf(id).records[codes[2]!] = [{ values: { [TEXT]: ['nothing'] }, files: {} }];
    putFile(id, codes[2]!, 1, 'other-field.pdf', undefined, 504);
    const res = await emu().api('GET', path);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['member_data']);
    expect(res.body.member_data.map((m: any) => m.code)).toEqual([codes[0], codes[1]]);
    const second = res.body.member_data[1];
    expect(second.records.map((r: any) => r.file_name)).toEqual(['b1.pdf', 'b3.pdf']);
    expect(Object.keys(second.records[0]).sort()).toEqual(['download_url', 'file_name', 'updated_at']);
    expect(second.records[0].updated_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it('gives download URLs that need no token and answer the bytes', async () => {
    const { id, codes, path } = arrange(0);
    await ok('POST', path, { member_data: [{ code: codes[0], records: [item('report.csv', 'a,b\n1,2\n')] }] });
    const res = await emu().api('GET', path);
    const url: string = res.body.member_data[0].records[0].download_url;
    expect(url).toMatch(/Expires=\d+/);
    expect(url.startsWith(`${emu().url}/storage/`)).toBe(true);
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).toString()).toBe('a,b\n1,2\n');
    expect(sheetOf(id).records[codes[0]!]![0]!.files[FILE]!.file_name).toBe('report.csv');
  });

  it('limits the list to files updated on or after updated_since', async () => {
    const { id, codes, path } = arrange(1);
    putFile(id, codes[0]!, 0, 'old.pdf', '2026-03-30 23:59:59');
    putFile(id, codes[0]!, 1, 'day.pdf', '2026-03-31 00:00:00');
    putFile(id, codes[1]!, 0, 'new.pdf', '2026-04-01 09:00:00');
    const since = await emu().api('GET', `${path}?updated_since=2026-03-31`);
    expect(since.status).toBe(200);
    expect(since.body.member_data.map((m: any) => [m.code, m.records.map((r: any) => r.file_name)])).toEqual([
      [codes[0], ['day.pdf']],
      [codes[1], ['new.pdf']],
    ]);
    const later = await emu().api('GET', `${path}?updated_since=2026-04-02`);
    expect(later.body.member_data).toEqual([]);
  });

  it.each(['yesterday', '2026-02-30', '2026/04/01', '20260401', ''])('answers 400 for updated_since=%s', async (value) => {
    const { path } = arrange(0);
    const res = await emu().api('GET', `${path}?updated_since=${value}`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/updated_since/);
  });

  it('answers 400 for a field that is not a file part, 404 for an unknown sheet or field', async () => {
    const { id } = arrange(0);
    const notFile = await emu().api('GET', `/sheets/${id}/custom_fields/${TEXT}/file`);
    expect(notFile.status).toBe(400);
    expect(notFile.body.errors[0]).toMatch(/not a file part/);
    expect((await emu().api('GET', `/sheets/99999/custom_fields/${FILE}/file`)).status).toBe(404);
    expect((await emu().api('GET', `/sheets/${id}/custom_fields/99999/file`)).status).toBe(404);
  });
});

/**
 * A service time (`YYYY-MM-DD HH:MM:SS`, which orders as text) taken while the request ran: the
 * emulator's clock runs, and a loaded machine once saw it cross a second between the answer and
 * the look at the clock.
 */
function expectWithin(time: string, from: string, to: string): void {
  expect(time >= from && time <= to, `${time} between ${from} and ${to}`).toBe(true);
}

describe('register attachments (api-v2.md 4.4 Sheets 7)', () => {
  it('single-record sheet: stores the file when the member has none, keeping the record values', async () => {
    const { id, codes, path } = arrange(0);
    sheetOf(id).records[codes[0]!] = [{ values: { [TEXT]: ['kept'] }, files: {} }];
    const before = companyOf(emu()).now();
    await ok('POST', path, { member_data: [{ code: codes[0], records: [item('cv.pdf', 'PDF')] }, { code: codes[1], records: [item('cv.pdf')] }] });
    const record = recordsOf(id, codes[0]!)[0]!;
    expect(record.values[TEXT]).toEqual(['kept']);
    expect(bytesOf(record.files[FILE]).toString()).toBe('PDF');
    expectWithin(record.files[FILE]!.updated_at, before, companyOf(emu()).now());
    expect(namesOf(id, codes[1]!)).toEqual(['cv.pdf']);
  });

  it('single-record sheet: NG when the member already has a file, whatever its name', async () => {
    const { id, codes, path } = arrange(0);
    const old = putFile(id, codes[0]!, 0, 'cv.pdf');
    for (const name of ['cv.pdf', 'other.pdf']) {
      const messages = await ng('POST', path, { member_data: [{ code: codes[0], records: [item(name)] }] });
      expect(messages).toHaveLength(1);
      expect(messages[0]).toMatch(new RegExp(`^member ${codes[0]}: .*already holds a file`));
    }
    expect(recordsOf(id, codes[0]!)[0]!.files[FILE]).toBe(old);
  });

  it('single-record sheet: NG for two files of one member in one request', async () => {
    const { id, codes, path } = arrange(0);
    await ng('POST', path, { member_data: [{ code: codes[0], records: [item('a.pdf'), item('b.pdf')] }] });
    await ng('POST', path, { member_data: [{ code: codes[0], records: [item('a.pdf')] }, { code: codes[0], records: [item('b.pdf')] }] });
    expect(recordsOf(id, codes[0]!)).toEqual([]);
  });

  it('multiple-record sheet: adds one record per file after the existing ones, in array order', async () => {
    const { id, codes, path } = arrange(1);
    sheetOf(id).records[codes[0]!] = [{ values: { [TEXT]: ['first'] }, files: {} }];
    await ok('POST', path, { member_data: [{ code: codes[0], records: [item('c.pdf'), item('a.pdf'), item('b.pdf')] }] });
    expect(namesOf(id, codes[0]!)).toEqual([null, 'c.pdf', 'a.pdf', 'b.pdf']);
    expect(recordsOf(id, codes[0]!)[0]!.values[TEXT]).toEqual(['first']);
    const listed = await emu().api('GET', path);
    expect(listed.body.member_data[0].records.map((r: any) => r.file_name)).toEqual(['c.pdf', 'a.pdf', 'b.pdf']);
  });

  it('multiple-record sheet: the new records get their formula parts (api-v2.md 4.4 Sheets 11)', async () => {
    const { id, codes, path } = arrange(1);
    await ok('POST', path, { member_data: [{ code: codes[0], records: [item('a.pdf')] }] });
    expect(recordsOf(id, codes[0]!)[0]!.values[CALC]).toEqual(['3']);
  });

  it('multiple-record sheet: NG for a name the member already holds in this field, or twice in one request', async () => {
    const { id, codes, path } = arrange(1);
    putFile(id, codes[0]!, 0, 'held.pdf');
    const held = await ng('POST', path, { member_data: [{ code: codes[0], records: [item('held.pdf')] }] });
    expect(held).toEqual([expect.stringMatching(new RegExp(`^member ${codes[0]}: file "held.pdf": .*already holds a file with this name`))]);
    const twice = await ng('POST', path, { member_data: [{ code: codes[0], records: [item('new.pdf'), item('new.pdf')] }] });
    expect(twice).toHaveLength(1);
    expect(twice[0]).toMatch(/file "new.pdf"/);
    expect(namesOf(id, codes[0]!)).toEqual(['held.pdf']);
  });

  it('multiple-record sheet: the same name is fine for different members and in another field', async () => {
    const { id, codes, path } = arrange(1);
    putFile(id, codes[0]!, 0, 'same.pdf', undefined, 504);
    await ok('POST', path, { member_data: [{ code: codes[0], records: [item('same.pdf')] }, { code: codes[1], records: [item('same.pdf')] }] });
    expect(namesOf(id, codes[0]!)).toEqual([null, 'same.pdf']);
    expect(namesOf(id, codes[1]!)).toEqual(['same.pdf']);
  });

  it('NG for an unknown member', async () => {
    const { path } = arrange(1);
    expect(await ng('POST', path, { member_data: [{ code: 'NO-SUCH', records: [item('a.pdf')] }] })).toEqual(['member NO-SUCH: no member has this code']);
  });
});

describe('partial update attachments (api-v2.md 4.4 Sheets 8)', () => {
  it('replaces the file with the same name: new bytes, new updated_at, the old file released', async () => {
    const { id, codes, path } = arrange(1);
    const old = putFile(id, codes[0]!, 0, 'a.pdf', '2026-03-01 00:00:00');
    putFile(id, codes[0]!, 1, 'b.pdf');
    const before = companyOf(emu()).now();
    await ok('PATCH', path, { member_data: [{ code: codes[0], records: [item('a.pdf', 'NEW')] }] });
    const now = recordsOf(id, codes[0]!)[0]!.files[FILE]!;
    expect(bytesOf(now).toString()).toBe('NEW');
    expectWithin(now.updated_at, before, companyOf(emu()).now());
    expect(released(old)).toBe(true);
    expect(namesOf(id, codes[0]!)).toEqual(['a.pdf', 'b.pdf']);
  });

  it('single-record sheet: replaces the file of the same name; NG for another name or no file', async () => {
    const { id, codes, path } = arrange(0);
    const old = putFile(id, codes[0]!, 0, 'cv.pdf');
    await ok('PATCH', path, { member_data: [{ code: codes[0], records: [item('cv.pdf', 'v2')] }] });
    expect(bytesOf(recordsOf(id, codes[0]!)[0]!.files[FILE]).toString()).toBe('v2');
    expect(released(old)).toBe(true);
    const other = await ng('PATCH', path, { member_data: [{ code: codes[0], records: [item('renamed.pdf')] }] });
    expect(other[0]).toMatch(new RegExp(`^member ${codes[0]}: file "renamed.pdf": .*holds no file with this name`));
    const none = await ng('PATCH', path, { member_data: [{ code: codes[1], records: [item('cv.pdf')] }] });
    expect(none[0]).toMatch(new RegExp(`^member ${codes[1]}: `));
  });

  it('NG when the member holds the name in two records; other members with the name once each are fine', async () => {
    const { id, codes, path } = arrange(1, 3);
    putFile(id, codes[0]!, 0, 'dup.pdf');
    putFile(id, codes[0]!, 1, 'dup.pdf');
    putFile(id, codes[1]!, 0, 'dup.pdf');
    putFile(id, codes[2]!, 0, 'dup.pdf');
    const messages = await ng('PATCH', path, { member_data: [{ code: codes[0], records: [item('dup.pdf')] }] });
    expect(messages).toEqual([expect.stringMatching(new RegExp(`^member ${codes[0]}: file "dup.pdf": .*holds 2 records with this file name`))]);
    await ok('PATCH', path, { member_data: [{ code: codes[1], records: [item('dup.pdf', 'one')] }, { code: codes[2], records: [item('dup.pdf', 'two')] }] });
    expect(bytesOf(recordsOf(id, codes[1]!)[0]!.files[FILE]).toString()).toBe('one');
    expect(bytesOf(recordsOf(id, codes[2]!)[0]!.files[FILE]).toString()).toBe('two');
  });

  it('NG when one request names the same file of a member twice', async () => {
    const { id, codes, path } = arrange(1);
    const old = putFile(id, codes[0]!, 0, 'a.pdf');
    await ng('PATCH', path, { member_data: [{ code: codes[0], records: [item('a.pdf', '1'), item('a.pdf', '2')] }] });
    expect(recordsOf(id, codes[0]!)[0]!.files[FILE]).toBe(old);
  });
});

describe('file rules of register and partial update (api-v2.md 4.4 Sheets 9)', () => {
  it('accepts every extension of the list, in any letter case', async () => {
    const { id, codes, path } = arrange(1);
    const names = [...ATTACHMENT_EXTENSIONS.map((ext) => `file.${ext}`), 'UPPER.PDF', 'dots.in.name.Docx'];
    await ok('POST', path, { member_data: [{ code: codes[0], records: names.map((n) => item(n)) }] });
    expect(namesOf(id, codes[0]!)).toEqual(names);
  });

  it('refuses every other extension, naming it, on register and partial update', async () => {
    const { id, codes, path } = arrange(1);
    const refused = ['exe', 'js', 'bat', 'sh', 'heic', 'webp', 'bmp', 'svg', 'tiff', 'jpe', 'docm', 'pptm', '7z', 'gz', 'json', 'md'];
    for (const method of ['POST', 'PATCH']) {
      const messages = await ng(method, path, { member_data: [{ code: codes[0], records: refused.map((ext) => item(`file.${ext}`)) }] });
      expect(messages).toHaveLength(refused.length);
      refused.forEach((ext, i) => expect(messages[i]).toMatch(new RegExp(`^member ${codes[0]}: file "file\\.${ext}": the extension \\.${ext} is not accepted`)));
    }
    const noExt = await ng('POST', path, { member_data: [{ code: codes[0], records: [item('README'), item('.pdf'), item('trailing.')] }] });
    expect(noExt).toHaveLength(3);
    expect(noExt[0]).toMatch(/extension \(none\)/);
    expect(namesOf(id, codes[0]!)).toEqual([]);
  });

  it('refuses a file name with a path or an empty name', async () => {
    const { path, codes } = arrange(1);
    const messages = await ng('POST', path, { member_data: [{ code: codes[0], records: [item('dir/a.pdf'), item('dir\\b.pdf'), item('')] }] });
    expect(messages).toHaveLength(3);
  });

  it('accepts a file of exactly 5 MB (5,242,880 bytes) and refuses one byte more', async () => {
    const { id, codes, path } = arrange(1);
    await ok('POST', path, { member_data: [{ code: codes[0], records: [item('max.pdf', Buffer.alloc(MAX_FILE_BYTES, 1))] }] });
    expect(recordsOf(id, codes[0]!)[0]!.files[FILE]!.size).toBe(5_242_880);
    const over = await ng('POST', path, { member_data: [{ code: codes[1], records: [item('over.pdf', Buffer.alloc(MAX_FILE_BYTES + 1, 1))] }] });
    expect(over[0]).toMatch(new RegExp(`^member ${codes[1]}: file "over.pdf": the file is 5242881 bytes, over the limit`));
    const update = await ng('PATCH', path, { member_data: [{ code: codes[0], records: [item('max.pdf', Buffer.alloc(MAX_FILE_BYTES + 1, 1))] }] });
    expect(update[0]).toMatch(/over the limit/);
    expect(recordsOf(id, codes[1]!)).toEqual([]);
  });

  it('accepts 1,000 files in a request and answers 400 for 1,001', async () => {
    const { id, codes, path } = arrange(1);
    const files = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => item(`${prefix}${i}.txt`, 'x'));
    const over = await emu().api('POST', path, { member_data: [{ code: codes[0], records: files(600, 'a') }, { code: codes[1], records: files(401, 'b') }] });
    expect(over.status).toBe(400);
    expect(over.body.errors[0]).toMatch(/1001 files, over the limit of 1000/);
    const overUpdate = await emu().api('PATCH', path, { member_data: [{ code: codes[0], records: files(1001, 'a') }] });
    expect(overUpdate.status).toBe(400);
    await ok('POST', path, { member_data: [{ code: codes[0], records: files(600, 'a') }, { code: codes[1], records: files(400, 'b') }] });
    expect(recordsOf(id, codes[0]!)).toHaveLength(600);
    expect(recordsOf(id, codes[1]!)).toHaveLength(400);
  });

  it.each([
    ['not base64', 'not base64!'],
    ['unpadded base64', 'YWJj ZA'],
    ['base64 without its padding', 'YWJjZA'],
    ['a data: prefix', 'data:application/pdf;base64,YWJj'],
    ['the URL-safe alphabet', 'YWJj-_8A'],
    ['padding inside the text', 'YQ==YWJj'],
    ['a space inside the text', 'YW JjZA='],
    ['an empty file', ''],
  ])('refuses %s, naming the member and file', async (_name, content) => {
    const { id, codes, path } = arrange(1);
    const messages = await ng('POST', path, { member_data: [{ code: codes[0], records: [{ file_name: 'a.pdf', base64_content: content }] }] });
    expect(messages).toEqual([expect.stringMatching(new RegExp(`^member ${codes[0]}: file "a.pdf": `))]);
    expect(recordsOf(id, codes[0]!)).toEqual([]);
  });
});

describe('request shape of the attachment writes', () => {
  it.each([
    ['no member_data', {}],
    ['empty member_data', { member_data: [] }],
    ['members without records', { member_data: [{ code: 'A', records: [] }] }],
    ['a record without base64_content', { member_data: [{ code: 'A', records: [{ file_name: 'a.pdf' }] }] }],
    ['a member without code', { member_data: [{ records: [{ file_name: 'a.pdf', base64_content: 'YWJj' }] }] }],
  ])('answers 400 for %s', async (_name, body) => {
    const { path } = arrange(1);
    for (const method of ['POST', 'PATCH']) expect((await emu().api(method, path, body)).status).toBe(400);
  });

  it('answers 404 for an unknown sheet or field and 400 for a field that is not a file part', async () => {
    const { id, codes } = arrange(1);
    const body = { member_data: [{ code: codes[0], records: [item('a.pdf')] }] };
    expect((await emu().api('POST', `/sheets/99999/custom_fields/${FILE}/file`, body)).status).toBe(404);
    expect((await emu().api('PATCH', `/sheets/${id}/custom_fields/99999/file`, body)).status).toBe(404);
    expect((await emu().api('POST', `/sheets/${id}/custom_fields/${TEXT}/file`, body)).status).toBe(400);
  });
});

describe('atomicity and dry run', () => {
  it('an NG request changes nothing, not even the files of its good members', async () => {
    const { id, codes, path } = arrange(1);
    const kept = putFile(id, codes[0]!, 0, 'a.pdf');
    const stamp = sheetOf(id).updated_at;
    await emu().control('POST', '/clock', { advance_seconds: 1 });
    await ng('POST', path, { member_data: [{ code: codes[0], records: [item('b.pdf')] }, { code: codes[1], records: [item('bad.exe')] }] });
    await ng('PATCH', path, { member_data: [{ code: codes[0], records: [item('a.pdf', 'new')] }, { code: codes[1], records: [item('none.pdf')] }] });
    expect(namesOf(id, codes[0]!)).toEqual(['a.pdf']);
    expect(recordsOf(id, codes[0]!)[0]!.files[FILE]).toBe(kept);
    expect(released(kept)).toBe(false);
    expect(recordsOf(id, codes[1]!)).toEqual([]);
    expect(sheetOf(id).updated_at).toBe(stamp);
  });

  it('Dry-Run: 1 validates, ends OK and changes nothing; a bad request still ends NG', async () => {
    const { id, codes, path } = arrange(1);
    const kept = putFile(id, codes[0]!, 0, 'a.pdf');
    const stamp = sheetOf(id).updated_at;
    await emu().control('POST', '/clock', { advance_seconds: 1 });
    const dry = { 'Dry-Run': '1' };
    expect((await run('POST', path, { member_data: [{ code: codes[1], records: [item('b.pdf')] }] }, dry)).status).toBe('OK');
    expect((await run('PATCH', path, { member_data: [{ code: codes[0], records: [item('a.pdf', 'new')] }] }, dry)).status).toBe('OK');
    expect((await run('POST', path, { member_data: [{ code: codes[0], records: [item('a.pdf')] }] }, dry)).status).toBe('NG');
    expect(recordsOf(id, codes[0]!)[0]!.files[FILE]).toBe(kept);
    expect(recordsOf(id, codes[1]!)).toEqual([]);
    expect(sheetOf(id).updated_at).toBe(stamp);
  });

  it('a successful write moves the sheet updated_at', async () => {
    const { id, codes, path } = arrange(1);
    const before = sheetOf(id).updated_at;
    await emu().control('POST', '/clock', { advance_seconds: 1 });
    await ok('POST', path, { member_data: [{ code: codes[0], records: [item('a.pdf')] }] });
    expect(sheetOf(id).updated_at > before).toBe(true);
  });
});
