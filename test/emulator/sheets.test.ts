/**
 * Sheets: layouts, the sheet read, bulk update, partial update and add records (api-v2.md 2, 4.2,
 * 4.4 Sheets 1 to 5, 10, 11; wire-format.md, Sheets).
 */
import { describe, expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { addMember, addSheet, companyOf, field } from '../helpers/fixtures.js';
import type { FieldDef, SheetRecord, SheetState, StoredFile } from '../../src/emulator/model.js';
import { sheetFormulaValue } from '../../src/emulator/routes/formula.js';

const emu = useEmulator({ limits: { updatesPerMinute: 100_000, requestsPerHour: 1_000_000 } });

const options = (...names: string[]) => names.map((name, i) => ({ id: i + 1, name }));

/** Every kind of part, ids 101 to 111; 109 is a formula over 102 (a number box). */
function allFields(): FieldDef[] {
  return [
    field(101, 'Text', 'text_box', { max_length: 5 }),
    field(102, 'Number', 'number_box'),
    field(103, 'Pulldown', 'pulldown', { options: options('A', 'B') }),
    field(104, 'Radio', 'radio', { options: options('X', 'Y') }),
    field(105, 'Checkbox', 'checkbox', { options: options('c1', 'c2', 'c3') }),
    field(106, 'Date', 'date'),
    field(107, 'Month', 'year_month'),
    field(108, 'File', 'attach_file'),
    field(109, 'Formula', 'calc_formula', { formula: '{102} * 2 + 1' }),
    field(110, 'Photo of', 'face_image'),
    field(111, 'Note', 'text_area'),
  ];
}

let nextSheet = 1;
let nextMember = 1;

/** A fresh sheet (unique id) and fresh members, so tests do not see each other's data. */
function arrange(recordType: 0 | 1, fields: FieldDef[] = allFields(), memberCount = 2): { id: number; codes: string[] } {
  const id = nextSheet++;
  addSheet(emu(), { id, name: `Sheet ${id}`, record_type: recordType, fields });
  const codes = Array.from({ length: memberCount }, () => addMember(emu(), `S${String(nextMember++).padStart(4, '0')}`).code);
  return { id, codes };
}

const sheetOf = (id: number): SheetState => companyOf(emu()).data.sheets[String(id)]!;

function putFile(sheetId: number, code: string, index: number, fieldId: number, name: string): StoredFile {
  const company = companyOf(emu());
  const list = (sheetOf(sheetId).records[code] ??= []);
  while (list.length <= index) list.push({ values: {}, files: {} });
  const file = company.storeFile(Buffer.from(`content of ${name}`), name);
  list[index]!.files[String(fieldId)] = file;
  return file;
}

function setValues(sheetId: number, code: string, values: Record<string, string[]>[]): void {
  sheetOf(sheetId).records[code] = values.map((v): SheetRecord => ({ values: { ...v }, files: {} }));
}

async function task(e: TestEmulator, method: string, path: string, body: unknown, headers?: Record<string, string>) {
  const res = await e.api(method, path, body, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return e.waitTask(res.body.task_id as number);
}

const run = (method: string, path: string, body: unknown, headers?: Record<string, string>) => task(emu(), method, path, body, headers);
const ok = async (method: string, path: string, body: unknown) => {
  const t = await run(method, path, body);
  expect(t.messages).toEqual([]);
  expect(t.status).toBe('OK');
};
const ng = async (method: string, path: string, body: unknown): Promise<string[]> => {
  const t = await run(method, path, body);
  expect(t.status).toBe('NG');
  return t.messages;
};

const rec = (fields: Record<number, string[]>) => ({ custom_fields: Object.entries(fields).map(([id, values]) => ({ id: Number(id), values })) });
const valuesOf = (record: SheetRecord | undefined) => record?.values ?? {};
const advance = (seconds: number) => emu().control('POST', '/clock', { advance_seconds: seconds });

async function readSheet(id: number, query = ''): Promise<any> {
  const res = await emu().api('GET', `/sheets/${id}${query}`);
  expect(res.status).toBe(200);
  return res.body;
}

describe('sheet layouts (api-v2.md 4.2; wire-format.md, Sheets)', () => {
  it('answers {sheets: [layout]} in id order, without formula parts unless get_calc_type=true', async () => {
    const a = arrange(0);
    const b = arrange(1);
    const res = await emu().api('GET', '/sheet_layouts');
    expect(res.status).toBe(200);
    const ids = res.body.sheets.map((s: any) => s.id);
    expect(ids.indexOf(a.id)).toBeLessThan(ids.indexOf(b.id));
    const layout = res.body.sheets.find((s: any) => s.id === b.id);
    expect(layout.record_type).toBe(1);
    expect(layout.custom_fields.map((f: any) => f.id)).not.toContain(109);
    const withCalc = await emu().api('GET', '/sheet_layouts?get_calc_type=true');
    const calc = withCalc.body.sheets.find((s: any) => s.id === b.id).custom_fields.find((f: any) => f.id === 109);
    expect(calc).toMatchObject({ type_detail: 'calc_formula', type: 'calc' });
  });

  it('describes each field with id, name, required, type, type_detail, max_length and enum', async () => {
    const { id } = arrange(0, [...allFields(), field(112, 'Must', 'text_box', { required: true, max_length: 20 })]);
    const res = await emu().api('GET', `/sheet_layouts/${id}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['custom_fields', 'id', 'name', 'record_type']);
    expect(res.body).toMatchObject({ id, name: `Sheet ${id}`, record_type: 0 });
    const byId = new Map<number, any>(res.body.custom_fields.map((f: any) => [f.id, f]));
    expect(byId.get(101)).toEqual({ id: 101, name: 'Text', required: false, type: 'string', type_detail: 'text_box', max_length: 5, enum: [] });
    expect(byId.get(112)).toMatchObject({ required: true, max_length: 20 });
    expect(byId.get(102)).toMatchObject({ type: 'number', type_detail: 'number_box', enum: [] });
    expect(byId.get(103)).toMatchObject({ type: 'enum', type_detail: 'pull_down', enum: ['A', 'B'] });
    expect(byId.get(104)).toMatchObject({ type: 'enum', type_detail: 'radio_button', enum: ['X', 'Y'] });
    expect(byId.get(105)).toMatchObject({ type: 'enum', type_detail: 'check_box', enum: ['c1', 'c2', 'c3'] });
    expect(byId.get(106)).toMatchObject({ type: 'date', type_detail: 'date' });
    expect(byId.get(107)).toMatchObject({ type: 'date', type_detail: 'year_month' });
    expect(byId.get(108)).toMatchObject({ type_detail: 'attach_file' });
    expect(byId.get(110)).toMatchObject({ type_detail: 'face_image' });
    expect(byId.has(109)).toBe(false);
    const withCalc = await emu().api('GET', `/sheet_layouts/${id}?get_calc_type=true`);
    expect(withCalc.body.custom_fields.map((f: any) => f.id)).toContain(109);
  });

  it('answers 404 for an unknown sheet and 400 for a get_calc_type that is not a boolean', async () => {
    expect((await emu().api('GET', '/sheet_layouts/99999')).status).toBe(404);
    const { id } = arrange(0);
    const bad = await emu().api('GET', `/sheet_layouts/${id}?get_calc_type=maybe`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toMatch(/get_calc_type/);
  });
});

describe('get sheet (api-v2.md 4.4 Sheets 1)', () => {
  it('shows every member with one record on a single-record sheet, [""] where nothing is stored', async () => {
    const { id, codes } = arrange(0);
    setValues(id, codes[0]!, [{ 101: ['abc'], 102: ['4'], 109: ['9'] }]);
    putFile(id, codes[0]!, 0, 108, 'cv.pdf');
    const body = await readSheet(id);
    expect(Object.keys(body).sort()).toEqual(['id', 'member_data', 'name', 'record_type', 'updated_at']);
    expect(body).toMatchObject({ id, name: `Sheet ${id}`, record_type: 0, updated_at: sheetOf(id).updated_at });
    const first = body.member_data.find((m: any) => m.code === codes[0]);
    expect(first.records).toHaveLength(1);
    const fields = new Map<number, any>(first.records[0].custom_fields.map((f: any) => [f.id, f]));
    expect(fields.get(101)).toEqual({ id: 101, name: 'Text', values: ['abc'] });
    expect(fields.get(108).values).toEqual(['cv.pdf']);
    expect(fields.has(109)).toBe(false);
    const second = body.member_data.find((m: any) => m.code === codes[1]);
    expect(second.records).toHaveLength(1);
    // An empty field answers [""], never [] (wire-format.md, "Real-client facts").
    expect(second.records[0].custom_fields.every((f: any) => f.values.length === 1 && f.values[0] === '')).toBe(true);
  });

  it('includes formula values only with get_calc_type=true', async () => {
    const { id, codes } = arrange(0);
    await ok('PUT', `/sheets/${id}`, { member_data: [{ code: codes[0], records: [rec({ 102: ['4'] })] }] });
    const body = await readSheet(id, '?get_calc_type=true');
    const fields = body.member_data.find((m: any) => m.code === codes[0]).records[0].custom_fields;
    expect(fields.find((f: any) => f.id === 109)).toEqual({ id: 109, name: 'Formula', values: ['9'] });
  });

  it('shows the records of a multiple-record sheet in stored order, none for a member without records', async () => {
    const { id, codes } = arrange(1);
    setValues(id, codes[0]!, [{ 101: ['one'] }, { 101: ['two'] }, { 101: ['three'] }]);
    const body = await readSheet(id);
    const first = body.member_data.find((m: any) => m.code === codes[0]);
    expect(first.records.map((r: any) => r.custom_fields.find((f: any) => f.id === 101).values[0])).toEqual(['one', 'two', 'three']);
    expect(body.member_data.find((m: any) => m.code === codes[1]).records).toEqual([]);
    const sorted = body.member_data.map((m: any) => m.code);
    expect(sorted).toEqual([...sorted].sort());
  });

  it('answers 404 for an unknown sheet', async () => {
    expect((await emu().api('GET', '/sheets/99999')).status).toBe(404);
  });
});

describe('bulk update (api-v2.md 4.4 Sheets 2)', () => {
  it('replaces a sent member record: fields absent from the body are cleared', async () => {
    const { id, codes } = arrange(0);
    setValues(id, codes[0]!, [{ 101: ['old'], 103: ['A'], 111: ['note'] }]);
    await ok('PUT', `/sheets/${id}`, {
      member_data: [
        { member_code: codes[0], records: [rec({ 101: ['new'], 104: ['Y'] })] },
        { member_code: codes[1], records: [rec({ 111: ['kept'] })] },
      ],
    });
    expect(valuesOf(sheetOf(id).records[codes[0]!]?.[0])).toEqual({ 101: ['new'], 104: ['Y'], 109: [] });
    expect(valuesOf(sheetOf(id).records[codes[1]!]?.[0])[111]).toEqual(['kept']);
  });

  it('deletes the data of members absent from the body, files included, and registers or deletes no member', async () => {
    const { id, codes } = arrange(0, allFields(), 3);
    setValues(id, codes[1]!, [{ 101: ['gone'] }]);
    const file = putFile(id, codes[2]!, 0, 108, 'gone.pdf');
    await ok('PUT', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 101: ['only'] })] }] });
    expect(sheetOf(id).records[codes[1]!]).toBeUndefined();
    expect(sheetOf(id).records[codes[2]!]).toBeUndefined();
    expect(companyOf(emu()).blobs.get(file.blob)?.releasedAt).toBeDefined();
    for (const code of codes) expect(companyOf(emu()).data.members[code]).toBeDefined();
  });

  it('stores multiple records in array order and replaces the old ones', async () => {
    const { id, codes } = arrange(1);
    setValues(id, codes[0]!, [{ 101: ['old1'] }, { 101: ['old2'] }]);
    await ok('PUT', `/sheets/${id}`, {
      member_data: [{ code: codes[0], records: [rec({ 101: ['c'] }), rec({ 101: ['a'] }), rec({ 101: ['b'] })] }],
    });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.values[101]![0])).toEqual(['c', 'a', 'b']);
  });

  it('empties a member sent with no records', async () => {
    const { id, codes } = arrange(1);
    setValues(id, codes[0]!, [{ 101: ['x'] }]);
    await ok('PUT', `/sheets/${id}`, { member_data: [{ code: codes[0], records: [] }] });
    expect(sheetOf(id).records[codes[0]!]).toBeUndefined();
  });

  it('accepts a sheet read sent back as the body (code, records, custom_fields with name)', async () => {
    const { id, codes } = arrange(1);
    setValues(id, codes[0]!, [{ 101: ['one'], 103: ['B'] }, { 105: ['c1', 'c3'] }]);
    const before = structuredClone(sheetOf(id).records);
    const read = await readSheet(id);
    await ok('PUT', `/sheets/${id}`, { member_data: read.member_data });
    const stripped = (records: SheetRecord[]) => records.map((r) => Object.fromEntries(Object.entries(r.values).filter(([, v]) => v.length)));
    expect(stripped(sheetOf(id).records[codes[0]!]!)).toEqual(stripped(before[codes[0]!]!));
  });
});

describe('partial update (api-v2.md 4.4 Sheets 3, 4)', () => {
  it('single-record sheet: only sent fields change, "" and [] clear a value, members not sent are unchanged', async () => {
    const { id, codes } = arrange(0);
    setValues(id, codes[0]!, [{ 101: ['keep'], 103: ['A'], 104: ['X'], 111: ['n'] }]);
    setValues(id, codes[1]!, [{ 101: ['other'] }]);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 103: ['B'], 104: [''], 111: [] })] }] });
    expect(valuesOf(sheetOf(id).records[codes[0]!]?.[0])).toEqual({ 101: ['keep'], 103: ['B'], 104: [], 111: [], 109: [] });
    expect(valuesOf(sheetOf(id).records[codes[1]!]?.[0])).toEqual({ 101: ['other'] });
  });

  it('single-record sheet: accepts custom_fields directly on the member element', async () => {
    const { id, codes } = arrange(0);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], custom_fields: [{ id: 101, values: ['dir'] }] }] });
    expect(sheetOf(id).records[codes[0]!]?.[0]?.values[101]).toEqual(['dir']);
  });

  it('multiple-record sheet: replaces the sent member records as a whole in array order; others unchanged', async () => {
    const { id, codes } = arrange(1);
    setValues(id, codes[0]!, [{ 101: ['a'], 111: ['x'] }, { 101: ['b'] }, { 101: ['c'] }]);
    setValues(id, codes[1]!, [{ 101: ['z'] }]);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ code: codes[0], records: [rec({ 101: ['2'] }), rec({ 101: ['1'] })] }] });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.values)).toEqual([{ 101: ['2'], 109: [] }, { 101: ['1'], 109: [] }]);
    expect(sheetOf(id).records[codes[1]!]!.map((r) => r.values)).toEqual([{ 101: ['z'] }]);
  });
});

describe('add records (api-v2.md 4.4 Sheets 5)', () => {
  it('appends the sent records after the existing ones, in array order', async () => {
    const { id, codes } = arrange(1);
    setValues(id, codes[0]!, [{ 101: ['a'] }]);
    await ok('POST', `/sheets/${id}/add`, {
      member_data: [{ member_code: codes[0], records: [rec({ 101: ['b'] }), rec({ 101: ['c'] })] }, { code: codes[1], records: [rec({ 101: ['z'] })] }],
    });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.values[101]![0])).toEqual(['a', 'b', 'c']);
    expect(sheetOf(id).records[codes[1]!]!.map((r) => r.values[101]![0])).toEqual(['z']);
  });

  it('keeps the files of existing records', async () => {
    const { id, codes } = arrange(1);
    const file = putFile(id, codes[0]!, 0, 108, 'a.pdf');
    await ok('POST', `/sheets/${id}/add`, { member_data: [{ member_code: codes[0], records: [rec({ 101: ['b'] })] }] });
    expect(sheetOf(id).records[codes[0]!]![0]!.files[108]).toBe(file);
    expect(companyOf(emu()).blobs.get(file.blob)?.releasedAt).toBeUndefined();
  });

  it('refuses a single-record sheet with 400', async () => {
    const { id, codes } = arrange(0);
    const res = await emu().api('POST', `/sheets/${id}/add`, { member_data: [{ member_code: codes[0], records: [rec({ 101: ['b'] })] }] });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/single-record/);
  });

  it('refuses a file part value (added records cannot carry files) and a member element without records', async () => {
    const { id, codes } = arrange(1);
    const messages = await ng('POST', `/sheets/${id}/add`, { member_data: [{ member_code: codes[0], records: [rec({ 108: ['a.pdf'] })] }] });
    expect(messages.join()).toMatch(new RegExp(`member ${codes[0]}: record 1: custom field 108 .*files`));
    const empty = await emu().api('POST', `/sheets/${id}/add`, { member_data: [{ member_code: codes[0], records: [] }] });
    expect(empty.status).toBe(400);
  });
});

describe('request shape: 400 or 404 before any task (wire-format.md, Sheets)', () => {
  it.each([
    ['no body member_data', {}],
    ['member_data not an array', { member_data: {} }],
    ['empty member_data', { member_data: [] }],
    ['no member code', { member_data: [{ records: [] }] }],
    ['member_code and code differ', { member_data: [{ member_code: 'A', code: 'B', records: [] }] }],
    ['neither records nor custom_fields', { member_data: [{ member_code: 'A' }] }],
    ['both records and custom_fields', { member_data: [{ member_code: 'A', records: [], custom_fields: [] }] }],
    ['values not an array of strings', { member_data: [{ member_code: 'A', records: [{ custom_fields: [{ id: 101, values: [1] }] }] }] }],
    ['field without id', { member_data: [{ member_code: 'A', records: [{ custom_fields: [{ values: ['x'] }] }] }] }],
  ])('answers 400 for %s', async (_name, body) => {
    const { id } = arrange(0);
    for (const method of ['PUT', 'PATCH']) {
      const res = await emu().api(method, `/sheets/${id}`, body);
      expect(res.status, `${method} ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
  });

  it('accepts member_code and code when equal', async () => {
    const { id, codes } = arrange(0);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], code: codes[0], records: [rec({ 101: ['x'] })] }] });
  });

  it('answers 400 for custom_fields directly on a member of a multiple-record sheet', async () => {
    const { id, codes } = arrange(1);
    const res = await emu().api('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], custom_fields: [] }] });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/multiple-record/);
  });

  it('answers 404 for an unknown sheet on every write', async () => {
    const body = { member_data: [{ member_code: 'A', records: [] }] };
    expect((await emu().api('PUT', '/sheets/99999', body)).status).toBe(404);
    expect((await emu().api('PATCH', '/sheets/99999', body)).status).toBe(404);
    expect((await emu().api('POST', '/sheets/99999/add', body)).status).toBe(404);
  });
});

describe('validation: NG per member, nothing changes (api-v2.md 2, 4.4 Sheets)', () => {
  const cases: [string, Record<number, string[]>, RegExp][] = [
    ['an unknown field id', { 999: ['x'] }, /custom field 999 is not a field of sheet/],
    ['a formula part', { 109: ['3'] }, /custom field 109 .*formula part.*cannot be updated directly/],
    ['a pulldown value that is not an option', { 103: ['C'] }, /custom field 103 .*has no choice "C"; choices: /],
    ['a radio value that is not an option', { 104: ['Z'] }, /custom field 104 .*has no choice "Z"; choices: /],
    ['a checkbox value that is not an option', { 105: ['c1', 'c9'] }, /custom field 105 .*has no choice "c9"; choices: /],
    ['a checkbox option named twice', { 105: ['c1', 'c1'] }, /custom field 105 .*more than once/],
    ['two values for a pulldown', { 103: ['A', 'B'] }, /custom field 103 .*one value/],
    ['a number box value that is not a number', { 102: ['12a'] }, /custom field 102 .*must be a number, got "12a"/],
    ['a number box value with a comma', { 102: ['1,000'] }, /custom field 102 .*must be a number/],
    ['a date that is not a calendar day', { 106: ['2026-02-30'] }, /custom field 106 .*must be a date YYYY-MM-DD, got "2026-02-30"/],
    ['a date in another format', { 106: ['2026/04/01'] }, /custom field 106 .*must be a date/],
    ['a year-month sent as YYYY-MM', { 107: ['2026-04'] }, /custom field 107 .*must be a date YYYY-MM-DD, got "2026-04"/],
    ['a text over max_length', { 101: ['abcdef'] }, /custom field 101 .*6 characters, over the maximum length of 5/],
    ['a face photo part naming no member', { 110: ['NOBODY'] }, /custom field 110 .*must name an existing member, got "NOBODY"/],
    ['an empty string among other values', { 105: ['c1', ''] }, /custom field 105 .*empty string/],
    ['two file names in a file part', { 108: ['a.pdf', 'b.pdf'] }, /custom field 108 .*one file/],
  ];

  it.each(cases)('refuses %s, naming the member, and changes nothing', async (_name, fields, pattern) => {
    const { id, codes } = arrange(0);
    setValues(id, codes[1]!, [{ 101: ['before'] }]);
    const stamp = sheetOf(id).updated_at;
    await advance(1);
    for (const method of ['PUT', 'PATCH']) {
      const messages = await ng(method, `/sheets/${id}`, {
        member_data: [
          { member_code: codes[0], records: [rec(fields)] },
          { member_code: codes[1], records: [rec({ 101: ['after'] })] },
        ],
      });
      expect(messages).toHaveLength(1);
      expect(messages[0]).toMatch(new RegExp(`^member ${codes[0]}: `));
      expect(messages[0]).toMatch(pattern);
    }
    expect(sheetOf(id).records[codes[0]!]).toBeUndefined();
    expect(sheetOf(id).records[codes[1]!]![0]!.values[101]).toEqual(['before']);
    expect(sheetOf(id).updated_at).toBe(stamp);
  });

  it('accepts the good forms of the same kinds', async () => {
    const { id, codes } = arrange(0);
    const values = { 101: ['あいうえお'], 102: ['-12.5'], 103: ['B'], 104: ['X'], 105: ['c3', 'c1'], 106: ['2024-02-29'], 107: ['2026-04-01'], 110: [codes[1]!], 111: ['free text'] };
    await ok('PUT', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec(values)] }] });
    expect(valuesOf(sheetOf(id).records[codes[0]!]?.[0])).toMatchObject(values);
  });

  it('refuses an unknown member and a member sent twice', async () => {
    const { id, codes } = arrange(0);
    const messages = await ng('PATCH', `/sheets/${id}`, {
      member_data: [
        { member_code: 'NO-SUCH', records: [rec({ 101: ['x'] })] },
        { member_code: codes[0], records: [rec({ 101: ['x'] })] },
        { code: codes[0], records: [rec({ 101: ['y'] })] },
      ],
    });
    expect(messages).toEqual([
      'member NO-SUCH: no member has this code',
      `member ${codes[0]}: appears more than once in member_data`,
    ]);
    expect(sheetOf(id).records[codes[0]!]).toBeUndefined();
  });

  it('refuses the same field twice in one record', async () => {
    const { id, codes } = arrange(0);
    const messages = await ng('PATCH', `/sheets/${id}`, {
      member_data: [{ member_code: codes[0], records: [{ custom_fields: [{ id: 101, values: ['a'] }, { id: 101, values: ['b'] }] }] }],
    });
    expect(messages[0]).toMatch(/custom field 101 .*more than once in one record/);
  });

  it('refuses more than one record for a member of a single-record sheet', async () => {
    const { id, codes } = arrange(0);
    for (const method of ['PUT', 'PATCH']) {
      const messages = await ng(method, `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 101: ['a'] }), rec({ 101: ['b'] })] }] });
      expect(messages).toEqual([`member ${codes[0]}: a single-record sheet holds one record per member, got 2`]);
    }
  });

  it('names the record of a multiple-record sheet in its messages', async () => {
    const { id, codes } = arrange(1);
    const messages = await ng('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 101: ['ok'] }), rec({ 102: ['x'] })] }] });
    expect(messages).toEqual([`member ${codes[0]}: record 2: custom field 102 ("Number"): must be a number, got "x"`]);
  });

  it('requires required fields in whole records (bulk update, multiple-record partial update, add records)', async () => {
    const fields = [field(201, 'Must', 'text_box', { required: true }), field(202, 'May', 'text_box'), field(203, 'File', 'attach_file', { required: true })];
    const single = arrange(0, fields);
    const multi = arrange(1, fields);
    const missing = new RegExp(`member ${single.codes[0]}: custom field 201 \\("Must"\\): is required and has no value`);
    expect((await ng('PUT', `/sheets/${single.id}`, { member_data: [{ member_code: single.codes[0], records: [rec({ 202: ['x'] })] }] }))[0]).toMatch(missing);
    expect((await ng('PUT', `/sheets/${single.id}`, { member_data: [{ member_code: single.codes[0], records: [rec({ 201: [''] })] }] }))[0]).toMatch(missing);
    for (const [method, path] of [['PUT', `/sheets/${multi.id}`], ['PATCH', `/sheets/${multi.id}`], ['POST', `/sheets/${multi.id}/add`]] as const) {
      const messages = await ng(method, path, { member_data: [{ member_code: multi.codes[0], records: [rec({ 201: ['ok'] }), rec({ 202: ['x'] })] }] });
      expect(messages).toEqual([`member ${multi.codes[0]}: record 2: custom field 201 ("Must"): is required and has no value`]);
    }
    // An invalid value of a required field is one problem, reported once.
    const invalid = await ng('PUT', `/sheets/${single.id}`, { member_data: [{ member_code: single.codes[0], records: [rec({ 201: ['a', 'b'] })] }] });
    expect(invalid).toEqual([`member ${single.codes[0]}: custom field 201 ("Must"): takes one value, got 2`]);
    // The required file part is exempt: files never come through sheet writes.
    await ok('PUT', `/sheets/${single.id}`, { member_data: [{ member_code: single.codes[0], records: [rec({ 201: ['ok'] })] }] });
  });

  it('single-record partial update: only a sent required field is checked, and it cannot be cleared', async () => {
    const { id, codes } = arrange(0, [field(201, 'Must', 'text_box', { required: true }), field(202, 'May', 'text_box')]);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 202: ['x'] })] }] });
    const messages = await ng('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 201: [''] })] }] });
    expect(messages).toEqual([`member ${codes[0]}: custom field 201 ("Must"): is required and cannot be cleared`]);
  });

  it('checks the rules on add records too', async () => {
    const { id, codes } = arrange(1);
    const messages = await ng('POST', `/sheets/${id}/add`, { member_data: [{ member_code: codes[0], records: [rec({ 103: ['nope'], 109: ['1'] })] }] });
    expect(messages).toHaveLength(2);
    expect(sheetOf(id).records[codes[0]!]).toBeUndefined();
  });
});

describe('dry run and updated_at', () => {
  it('Dry-Run: 1 validates, ends OK and changes nothing', async () => {
    const { id, codes } = arrange(1);
    setValues(id, codes[0]!, [{ 101: ['a'] }]);
    const stamp = sheetOf(id).updated_at;
    await advance(1);
    for (const [method, path] of [['PUT', `/sheets/${id}`], ['PATCH', `/sheets/${id}`], ['POST', `/sheets/${id}/add`]] as const) {
      const t = await run(method, path, { member_data: [{ member_code: codes[0], records: [rec({ 101: ['b'] })] }] }, { 'Dry-Run': '1' });
      expect(t.status).toBe('OK');
    }
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.values)).toEqual([{ 101: ['a'] }]);
    expect(sheetOf(id).updated_at).toBe(stamp);
    const bad = await run('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 102: ['x'] })] }] }, { 'Dry-Run': '1' });
    expect(bad.status).toBe('NG');
  });

  it('every write moves the sheet updated_at to the service time', async () => {
    const { id, codes } = arrange(1);
    for (const [method, path] of [['PUT', `/sheets/${id}`], ['PATCH', `/sheets/${id}`], ['POST', `/sheets/${id}/add`]] as const) {
      const before = sheetOf(id).updated_at;
      await advance(2);
      await ok(method, path, { member_data: [{ member_code: codes[0], records: [rec({ 101: ['v'] })] }] });
      const after = sheetOf(id).updated_at;
      expect(after > before).toBe(true);
      expect((await readSheet(id)).updated_at).toBe(after);
    }
  });
});

describe('attachment preservation (api-v2.md 4.4 Sheets 10)', () => {
  const released = (file: StoredFile) => companyOf(emu()).blobs.get(file.blob)?.releasedAt !== undefined;

  it('single record, bulk update: the file stays when the sent value is its name, else it is deleted', async () => {
    const { id, codes } = arrange(0, allFields(), 3);
    const same = putFile(id, codes[0]!, 0, 108, 'cv.pdf');
    const other = putFile(id, codes[1]!, 0, 108, 'cv.pdf');
    const absent = putFile(id, codes[2]!, 0, 108, 'cv.pdf');
    await ok('PUT', `/sheets/${id}`, {
      member_data: [
        { member_code: codes[0], records: [rec({ 101: ['a'], 108: ['cv.pdf'] })] },
        { member_code: codes[1], records: [rec({ 101: ['b'], 108: ['other.pdf'] })] },
        { member_code: codes[2], records: [rec({ 101: ['c'] })] },
      ],
    });
    expect(sheetOf(id).records[codes[0]!]![0]!.files[108]).toBe(same);
    expect(released(same)).toBe(false);
    expect(sheetOf(id).records[codes[1]!]![0]!.files[108]).toBeUndefined();
    expect(released(other)).toBe(true);
    expect(sheetOf(id).records[codes[2]!]![0]!.files[108]).toBeUndefined();
    expect(released(absent)).toBe(true);
    const read = await readSheet(id);
    const fileValues = (code: string) => read.member_data.find((m: any) => m.code === code).records[0].custom_fields.find((f: any) => f.id === 108).values;
    expect(fileValues(codes[0]!)).toEqual(['cv.pdf']);
    expect(fileValues(codes[1]!)).toEqual(['']);
  });

  it('single record, partial update: a file part not sent is unchanged; sent with its name it stays; sent otherwise it goes', async () => {
    const { id, codes } = arrange(0, allFields(), 3);
    const untouched = putFile(id, codes[0]!, 0, 108, 'a.pdf');
    const named = putFile(id, codes[1]!, 0, 108, 'b.pdf');
    const cleared = putFile(id, codes[2]!, 0, 108, 'c.pdf');
    await ok('PATCH', `/sheets/${id}`, {
      member_data: [
        { member_code: codes[0], records: [rec({ 101: ['x'] })] },
        { member_code: codes[1], records: [rec({ 108: ['b.pdf'] })] },
        { member_code: codes[2], records: [rec({ 108: [''] })] },
      ],
    });
    expect(sheetOf(id).records[codes[0]!]![0]!.files[108]).toBe(untouched);
    expect(sheetOf(id).records[codes[1]!]![0]!.files[108]).toBe(named);
    expect(sheetOf(id).records[codes[2]!]![0]!.files[108]).toBeUndefined();
    expect([released(untouched), released(named), released(cleared)]).toEqual([false, false, true]);
  });

  it('the file name must match exactly (case and extension)', async () => {
    const { id, codes } = arrange(0);
    const file = putFile(id, codes[0]!, 0, 108, 'CV.pdf');
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 108: ['cv.pdf'] })] }] });
    expect(sheetOf(id).records[codes[0]!]![0]!.files[108]).toBeUndefined();
    expect(released(file)).toBe(true);
  });

  it('multiple records: a file named once in the old records and once in the new ones moves to its new record', async () => {
    const { id, codes } = arrange(1);
    const a = putFile(id, codes[0]!, 0, 108, 'a.pdf');
    const b = putFile(id, codes[0]!, 1, 108, 'b.pdf');
    const c = putFile(id, codes[0]!, 2, 108, 'c.pdf');
    for (const method of ['PATCH', 'PUT']) {
      if (method === 'PUT') {
        // Back to three files for the second round.
        sheetOf(id).records[codes[0]!] = [{ values: {}, files: { 108: a } }, { values: {}, files: { 108: b } }, { values: {}, files: { 108: c } }];
      }
      await ok(method, `/sheets/${id}`, {
        member_data: [{ member_code: codes[0], records: [rec({ 101: ['1'], 108: ['b.pdf'] }), rec({ 101: ['2'] }), rec({ 101: ['3'], 108: ['a.pdf'] })] }],
      });
      const records = sheetOf(id).records[codes[0]!]!;
      expect(records.map((r) => r.files[108]?.file_name ?? null)).toEqual(['b.pdf', null, 'a.pdf']);
      expect(records[0]!.files[108]).toBe(b);
      expect(records[2]!.files[108]).toBe(a);
      expect([released(a), released(b), released(c)]).toEqual([false, false, true]);
    }
  });

  it('multiple records: a name the member holds in two records is not kept in either', async () => {
    const { id, codes } = arrange(1);
    const first = putFile(id, codes[0]!, 0, 108, 'same.pdf');
    const second = putFile(id, codes[0]!, 1, 108, 'same.pdf');
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 108: ['same.pdf'] }), rec({ 101: ['x'] })] }] });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.files[108])).toEqual([undefined, undefined]);
    expect([released(first), released(second)]).toEqual([true, true]);
  });

  it('multiple records: a name asked for by two new records is not kept', async () => {
    const { id, codes } = arrange(1);
    const file = putFile(id, codes[0]!, 0, 108, 'one.pdf');
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 108: ['one.pdf'] }), rec({ 108: ['one.pdf'] })] }] });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.files[108])).toEqual([undefined, undefined]);
    expect(released(file)).toBe(true);
  });

  it('multiple records: files are matched within the member and the field only', async () => {
    const fields = [...allFields(), field(120, 'File 2', 'attach_file')];
    const { id, codes } = arrange(1, fields);
    const mine = putFile(id, codes[0]!, 0, 120, 'x.pdf');
    const theirs = putFile(id, codes[1]!, 0, 108, 'y.pdf');
    await ok('PATCH', `/sheets/${id}`, {
      member_data: [{ member_code: codes[0], records: [rec({ 108: ['x.pdf'] }), rec({ 108: ['y.pdf'] })] }],
    });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => Object.keys(r.files).length)).toEqual([0, 0]);
    expect(released(mine)).toBe(true);
    expect(sheetOf(id).records[codes[1]!]![0]!.files[108]).toBe(theirs);
    expect(released(theirs)).toBe(false);
  });

  it('an NG write keeps every file', async () => {
    const { id, codes } = arrange(1);
    const file = putFile(id, codes[0]!, 0, 108, 'a.pdf');
    await ng('PUT', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 102: ['bad'] })] }] });
    expect(sheetOf(id).records[codes[0]!]![0]!.files[108]).toBe(file);
    expect(released(file)).toBe(false);
  });
});

describe('formula parts (api-v2.md 4.4 Sheets 11)', () => {
  const formulaFields = (formula: string) => [
    field(301, 'A', 'number_box'),
    field(302, 'B', 'number_box'),
    field(303, 'Text', 'text_box'),
    field(309, 'Calc', 'calc_formula', { formula }),
  ];
  const calc = (formula: string, values: Record<string, string[]>) =>
    sheetFormulaValue(formula, formulaFields(formula), { values, files: {} });

  it('evaluates + - * /, precedence, parentheses, unary minus and decimals without eval', () => {
    expect(calc('{301} * {302} + 1', { 301: ['3'], 302: ['4'] })).toBe('13');
    expect(calc('{301} + {302} * 2', { 301: ['3'], 302: ['4'] })).toBe('11');
    expect(calc('({301} + {302}) * 2', { 301: ['3'], 302: ['4'] })).toBe('14');
    expect(calc('-{301} - -2', { 301: ['3'] })).toBe('-1');
    expect(calc('{301} / {302}', { 301: ['1'], 302: ['4'] })).toBe('0.25');
    expect(calc('{301} + {302}', { 301: ['0.1'], 302: ['0.2'] })).toBe('0.3');
    expect(calc('10 / 4', {})).toBe('2.5');
  });

  it('gives "" for division by zero, a bad reference, a missing input or a malformed formula', () => {
    expect(calc('{301} / {302}', { 301: ['1'], 302: ['0'] })).toBe('');
    expect(calc('{301} / ({302} - {302})', { 301: ['1'], 302: ['5'] })).toBe('');
    expect(calc('{303} + 1', { 303: ['5'] })).toBe('');
    expect(calc('{999} + 1', {})).toBe('');
    expect(calc('{309} + 1', { 309: ['5'] })).toBe('');
    expect(calc('{301} + {302}', { 301: ['1'] })).toBe('');
    expect(calc('{301} +', { 301: ['1'] })).toBe('');
    expect(calc('({301}', { 301: ['1'] })).toBe('');
    expect(calc('process.exit(1)', {})).toBe('');
  });

  it('is recalculated after bulk update, partial update and add records, and stored', async () => {
    const { id, codes } = arrange(1, formulaFields('{301} * {302} + 1'));
    await ok('PUT', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 301: ['2'], 302: ['5'] }), rec({ 301: ['1'] })] }] });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.values[309])).toEqual([['11'], []]);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 301: ['3'], 302: ['3'] })] }] });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.values[309])).toEqual([['10']]);
    await ok('POST', `/sheets/${id}/add`, { member_data: [{ member_code: codes[0], records: [rec({ 301: ['1'], 302: ['0'] })] }] });
    expect(sheetOf(id).records[codes[0]!]!.map((r) => r.values[309])).toEqual([['10'], ['1']]);
    const read = await readSheet(id, '?get_calc_type=true');
    const shown = read.member_data.find((m: any) => m.code === codes[0]).records.map((r: any) => r.custom_fields.find((f: any) => f.id === 309).values);
    expect(shown).toEqual([['10'], ['1']]);
  });

  it('single-record partial update recalculates from the merged record', async () => {
    const { id, codes } = arrange(0, formulaFields('{301} / {302}'));
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 301: ['9'], 302: ['3'] })] }] });
    expect(sheetOf(id).records[codes[0]!]![0]!.values[309]).toEqual(['3']);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 302: ['0'] })] }] });
    expect(sheetOf(id).records[codes[0]!]![0]!.values[309]).toEqual([]);
    await ok('PATCH', `/sheets/${id}`, { member_data: [{ member_code: codes[0], records: [rec({ 302: ['2'] })] }] });
    expect(sheetOf(id).records[codes[0]!]![0]!.values[309]).toEqual(['4.5']);
  });
});
