/**
 * Sheet updates through the legacy interface over HTTP (api-v1-legacy.md 4 operations 9, 10, 15,
 * 16 and behaviour 7-10), and the same company seen from both interfaces: a member added through
 * v1 is in v2 `GET /members`, one registered through v2 is in v1 sheet 0.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { OPEN_LIMITS, v1Caller, v1Update, v2Getter } from './legacy-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: OPEN_LIMITS });
const call = v1Caller(emu);
const v2 = v2Getter(emu);

beforeEach(async () => {
  await emu().control('POST', '/reset');
});

const v2Members = async () => (await v2('/members')).member_data as any[];
const v2Member = async (code: string) => (await v2Members()).find((m) => m.code === code);
const sheet0 = async () => (await call('/sheet/0')).body.data as any[];
const v2Sheet = async (id: number) => (await v2(`/sheets/${id}`)).member_data as any[];
const valuesOf = (record: any, id: number) => record.custom_fields.find((f: any) => f.id === id).values;

describe('v1 and v2 over the same data', () => {
  it('a member added through v1 sheet 0 is in v2 GET /members with its base information, departments and fields', async () => {
    const task = await v1Update(call, '/sheet/0/data/add', {
      data: [{
        member_code: 'V1-001', member_name: '新規 一郎', member_kana: 'シンキ イチロウ', mail: 'v1@example.com',
        entered_date: '2026/04/01', birthday: '1990-12-24', gender: '男性',
        department_code: '1110', sub_department_codes: '1200,1300', definition_1101: 'パート / Part-time', definition_1103: 4321,
      }],
    });
    expect(task.status).toBe('OK');
    const member = await v2Member('V1-001');
    expect(member).toMatchObject({
      name: '新規 一郎', name_kana: 'シンキ イチロウ', mail: 'v1@example.com', entered_date: '2026-04-01', birthday: '1990-12-24', gender: '男性',
      department: { code: '1110' }, sub_departments: [{ code: '1200' }, { code: '1300' }],
    });
    expect(valuesOf(member, 1101)).toEqual(['パート / Part-time']);
    expect(valuesOf(member, 1103)).toEqual(['4321']);
  });

  it('a member registered through v2 is in v1 sheet 0, and its sheet data in the v1 sheet read', async () => {
    const res = await emu().api('POST', '/members', { member_data: [{ code: 'V2-001', name: 'Two Member', entered_date: '2025-10-01', department: { code: '1300' } }] }, { 'Service-Token': await emu().token() });
    expect(res.status).toBe(200);
    await emu().control('GET', '/tasks/drain');
    const record = (await sheet0()).find((r) => r.member_code === 'V2-001');
    const member = await v2Member('V2-001');
    expect(record).toMatchObject({ member_name: 'Two Member', entered_date: '2025/10/01', department_code: '1300', department_name: member.department.name });
    expect((await sheet0()).map((r) => r.member_code)).toEqual((await v2Members()).map((m) => m.code));
  });
});

describe('sheet 0 rules', () => {
  it('add refuses an employee number that exists and a concurrent department equal to the primary, changing nothing', async () => {
    const before = await v2Members();
    const task = await v1Update(call, '/sheet/0/data/add', {
      data: [
        { member_code: 'A0001', member_name: 'Again' },
        { member_code: 'V1-002', member_name: 'Twice', department_code: '1100', sub_department_codes: ['1100'] },
      ],
    });
    expect(task.status).toBe('NG');
    expect(task.errors).toEqual([
      expect.stringMatching(/^member A0001: a member with this employee number already exists/),
      expect.stringMatching(/^member V1-002: concurrent department "1100" is the member's primary department/),
    ]);
    expect(await v2Members()).toEqual(before);
  });

  it('partial update changes only the named members and only the keys sent; an unknown code is NG (the key cannot change)', async () => {
    const before = await v2Members();
    const a1 = before.find((m) => m.code === 'A0001');
    expect((await v1Update(call, '/sheet/0/data/update', { data: [{ member_code: 'A0001', mail: 'new.mail@example.com', definition_1102: 'B' }] })).status).toBe('OK');
    const after = await v2Members();
    const changed = after.find((m) => m.code === 'A0001');
    expect(changed).toEqual({ ...a1, mail: 'new.mail@example.com', custom_fields: a1.custom_fields.map((f: any) => (f.id === 1102 ? { ...f, values: ['B'] } : f)) });
    expect(after.filter((m) => m.code !== 'A0001')).toEqual(before.filter((m) => m.code !== 'A0001'));

    const rename = await v1Update(call, '/sheet/0/data/update', { data: [{ member_code: 'Z9999', member_name: 'Renamed' }] });
    expect(rename.status).toBe('NG');
    expect(rename.errors).toEqual([expect.stringMatching(/^member Z9999: no member has this employee number \(it is the key and cannot be changed/)]);
    const primary = await v1Update(call, '/sheet/0/data/update', { data: [{ member_code: 'A0014', sub_department_codes: '1220' }] });
    expect(primary.status).toBe('NG');
    expect(primary.errors![0]).toMatch(/concurrent department "1220" is the member's primary department/);
  });

  it('overwrite replaces every member: the absent are deleted, the sent are replaced whole, the new are registered', async () => {
    const keep = (await sheet0()).filter((r) => ['A0001', 'A0002'].includes(r.member_code));
    const task = await v1Update(call, '/sheet/0/data/overwrite', {
      data: [...keep, { member_code: 'V1-010', member_name: 'Only New' }, { member_code: 'A0025', member_name: 'Ikeda Only Name' }],
    });
    expect(task.status).toBe('OK');
    const after = await v2Members();
    expect(after.map((m) => m.code)).toEqual(['A0001', 'A0002', 'A0025', 'V1-010']);
    expect(after.find((m) => m.code === 'A0025')).toMatchObject({ name: 'Ikeda Only Name', mail: '', department: null });
    // A read sent back is a whole member: A0001 is as it was.
    expect((await sheet0()).find((r) => r.member_code === 'A0001')).toEqual({ ...keep[0], last_modified_at: expect.any(String) });
    // Sheet data of deleted members went with them.
    expect((await v2Sheet(2)).map((m) => m.code)).toEqual(['A0001', 'A0002', 'A0025', 'V1-010']);
  });

  it('partial delete on sheet 0 deletes the members; an unknown code is NG and deletes nothing', async () => {
    const ng = await v1Update(call, '/sheet/0/data/delete', { data: [{ member_code: 'A0030' }, { member_code: 'nobody' }] });
    expect(ng.status).toBe('NG');
    expect((await v2Member('A0030'))).toBeDefined();
    expect((await v1Update(call, '/sheet/0/data/delete', { data: [{ member_code: 'A0030' }, { member_code: 'A0029' }] })).status).toBe('OK');
    const codes = (await v2Members()).map((m) => m.code);
    expect(codes).not.toContain('A0030');
    expect(codes).not.toContain('A0029');
    expect(codes).toHaveLength(28);
  });
});

describe('other sheets', () => {
  it('partial update of a single-record sheet changes only the fields sent, as v2 then reads them', async () => {
    const before = (await v2Sheet(1)).find((m) => m.code === 'A0002').records[0];
    expect((await v1Update(call, '/sheet/1/data/update', { data: [{ member_code: 'A0002', definition_1203: '999000', definition_1201: '2001/02/03' }] })).status).toBe('OK');
    const after = (await v2Sheet(1)).find((m) => m.code === 'A0002').records[0];
    expect(valuesOf(after, 1203)).toEqual(['999000']);
    expect(valuesOf(after, 1201)).toEqual(['2001-02-03']);
    expect(valuesOf(after, 1202)).toEqual(valuesOf(before, 1202));
    // The file part v1 does not show keeps its file.
    expect(valuesOf(after, 1204)).toEqual(valuesOf(before, 1204));
    expect((await call('/sheet/1')).body.data.find((r: any) => r.member_code === 'A0002').definition_1201).toBe('2001/02/03');
  });

  it('add appends records on a multiple-record sheet (formula parts recalculated)', async () => {
    const before = (await v2Sheet(2)).find((m) => m.code === 'A0005').records.length;
    const task = await v1Update(call, '/sheet/2/data/add', {
      data: [{ member_code: 'A0005', definition_1301: 'FE', definition_1302: '2024/10/20', definition_1303: '国家資格 / National', definition_1304: '3' }],
    });
    expect(task.status).toBe('OK');
    const records = (await v2Sheet(2)).find((m) => m.code === 'A0005').records;
    expect(records).toHaveLength(before + 1);
    expect(valuesOf(records.at(-1), 1301)).toEqual(['FE']);
    expect(valuesOf(records.at(-1), 1302)).toEqual(['2024-10-20']);
  });

  it('overwrite leaves only the members sent with data in that sheet; their base information stays', async () => {
    const a3 = (await call('/sheet/2')).body.data.filter((r: any) => r.member_code === 'A0003');
    expect((await v1Update(call, '/sheet/2/data/overwrite', { data: a3 })).status).toBe('OK');
    const sheet = await v2Sheet(2);
    expect(sheet.filter((m) => m.records.length).map((m) => m.code)).toEqual(['A0003']);
    expect(sheet.find((m) => m.code === 'A0003').records).toHaveLength(a3.length);
    expect(await v2Members()).toHaveLength(30);
  });

  it('partial delete on another sheet deletes only that sheet data of the members', async () => {
    expect((await v1Update(call, '/sheet/2/data/delete', { data: [{ member_code: 'A0003' }] })).status).toBe('OK');
    expect((await v2Sheet(2)).find((m) => m.code === 'A0003').records).toEqual([]);
    expect(await v2Member('A0003')).toBeDefined();
    expect((await v2Sheet(1)).find((m) => m.code === 'A0003').records[0].custom_fields.length).toBeGreaterThan(0);
  });

  it('a value the field does not take is NG naming the member and the field', async () => {
    const task = await v1Update(call, '/sheet/1/data/update', { data: [{ member_code: 'A0002', definition_1202: 'Forever' }] });
    expect(task.status).toBe('NG');
    expect(task.errors![0]).toMatch(/^member A0002: custom field 1202 \("契約期間 \/ Term"\): has no choice "Forever"; choices: 無期 \/ Permanent/);
  });
});

describe('dry-run and bad bodies', () => {
  it('dry-run updates answer {status, errors}, no progress_id, and change nothing', async () => {
    const before = await v2Members();
    const ok = await call('/sheet/0/data/update?dryrun=1', { data: [{ member_code: 'A0001', member_name: 'Dry' }] });
    expect(ok.body).toEqual({ status: 'OK', errors: [] });
    const ng = await call('/sheet/0/data/delete', { dryrun: 1, data: [{ member_code: 'nobody' }] });
    expect(ng.body).toEqual({ status: 'NG', errors: ['member nobody: no member has this employee number'] });
    const overwrite = await call('/sheet/0/data/overwrite', { dryrun: '1', data: [{ member_code: 'A0001', member_name: 'Alone' }] });
    expect(overwrite.body).toEqual({ status: 'OK', errors: [] });
    expect(await v2Members()).toEqual(before);
  });

  it('answers 400 naming unknown fields, file parts, wrong types and a missing member_code', async () => {
    const unknown = await call('/sheet/0/data/add', { data: [{ member_code: 'X', nickname: 'x' }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ status: 'NG', errors: ['unknown field "nickname" in data[0]'] });
    const file = await call('/sheet/1/data/update', { data: [{ member_code: 'A0001', definition_1204: 'a.pdf' }] });
    expect(file.body.errors[0]).toMatch(/unknown field "definition_1204" in data\[0\]: sheet 1 has no field 1204 that v1 can write/);
    const wrong = await call('/sheet/0/data/update', { data: [{ member_code: 'A0001', member_name: true }] });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors[0]).toMatch(/^data\[0\]\.member_name: must be a string/);
    const missing = await call('/sheet/0/data/update', { data: [{ member_name: 'x' }] });
    expect(missing.body.errors).toEqual(['data[0].member_code: is required']);
    const empty = await call('/sheet/0/data/overwrite', { data: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual(['data: must hold at least one record']);
    const noSheet = await call('/sheet/77/data/add', { data: [{ member_code: 'A0001' }] });
    expect(noSheet.status).toBe(404);
  });
});
