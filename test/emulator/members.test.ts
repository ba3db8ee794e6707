import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addMember, addSheet, companyOf, field, jpeg, setPhoto } from '../helpers/fixtures.js';
import type { FieldDef } from '../../src/emulator/model.js';

// Many task requests in one file: the 5-a-minute update limit has its own tests elsewhere.
const emu = useEmulator({ limits: { updatesPerMinute: 10_000 } });

interface Delivery {
  headers: IncomingHttpHeaders;
  body: { event: string; event_time: string; member_data: { code: string }[] };
}

const deliveries: Delivery[] = [];
let receiver: Server;
let receiverUrl = '';

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

const MEMBER_FIELDS: FieldDef[] = [
  field(11, 'Blood type', 'pulldown', { options: [{ id: 1, name: 'A' }, { id: 2, name: 'B' }] }),
  field(12, 'Skills', 'checkbox', { options: [{ id: 3, name: 'Go' }, { id: 4, name: 'Rust' }, { id: 5, name: 'SQL' }] }),
  field(13, 'Nickname', 'text_box', { max_length: 10 }),
  field(14, 'Salary', 'number_box'),
  field(15, 'Bonus', 'number_box'),
  field(16, 'Total', 'calc_formula', { formula: '{14} + {15} * 2' }),
  field(17, 'Joined group', 'date'),
  field(18, 'Shift', 'radio', { options: [{ id: 6, name: 'Day' }, { id: 7, name: 'Night' }] }),
];

beforeEach(async () => {
  const company = companyOf(emu());
  await company.reset();
  company.data.member_fields = structuredClone(MEMBER_FIELDS);
  company.data.departments = [
    { code: 'HQ', name: 'Head office', parent_code: null, leader_member_code: null, order: 1, memo: '' },
    { code: 'SALES', name: 'Sales', parent_code: 'HQ', leader_member_code: null, order: 1, memo: '' },
    { code: 'S1', name: 'Sales 1', parent_code: 'SALES', leader_member_code: null, order: 1, memo: '' },
    { code: 'DEV', name: 'Development', parent_code: 'HQ', leader_member_code: null, order: 2, memo: '' },
  ];
  company.data.webhooks = [{
    id: 1, url: receiverUrl, events: ['member_created', 'member_updated', 'member_deleted'], secret_token: 'hook-secret',
    created_at: company.now(), updated_at: company.now(),
  }];
  deliveries.length = 0;
});

/** Sends a task request, expects 200 with a task id, and waits for the task to end. */
async function runTask(method: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await emu().api(method, path, body, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const task = await emu().waitTask(res.body.task_id);
  await emu().emulator.webhooks.settle();
  return task;
}

const data = () => companyOf(emu()).data;
const events = () => deliveries.map((d) => ({ event: d.body.event, codes: d.body.member_data.map((m) => m.code).sort() }));

async function listed(code: string): Promise<any> {
  const res = await emu().api('GET', '/members');
  expect(res.status).toBe(200);
  return res.body.member_data.find((m: { code: string }) => m.code === code);
}

describe('GET /member_layouts (api-v2.md 2, 4.2)', () => {
  it('describes every base field with label, required flag, type, maximum length and choices', async () => {
    const res = await emu().api('GET', '/member_layouts');
    expect(res.status).toBe(200);
    for (const key of ['code', 'name', 'name_kana', 'mail', 'entered_date', 'retired_date', 'gender', 'birthday', 'department', 'sub_departments']) {
      expect(Object.keys(res.body[key]).sort(), key).toEqual(['enum', 'max_length', 'name', 'required', 'type']);
    }
    expect(res.body.code).toMatchObject({ required: true, type: 'string', max_length: 50 });
    expect(res.body.name).toMatchObject({ required: true, type: 'string', max_length: 100 });
    expect(res.body.mail).toMatchObject({ required: false, max_length: 100 });
    expect(res.body.entered_date).toMatchObject({ type: 'date', max_length: null });
    expect(res.body.gender.enum).toEqual(['男性', '女性']);
    expect(res.body.department.type).toBe('department');
    expect(res.body.sub_departments.type).toBe('department[]');
  });

  it('lists the member custom fields with id, type_detail and choices, formula parts only with get_calc_type=true', async () => {
    const plain = await emu().api('GET', '/member_layouts');
    const ids = plain.body.custom_fields.map((f: { id: number }) => f.id);
    expect(ids).toEqual([11, 12, 13, 14, 15, 17, 18]);
    expect(plain.body.custom_fields[0]).toEqual({ id: 11, name: 'Blood type', required: false, type: 'enum', type_detail: 'pull_down', max_length: null, enum: ['A', 'B'] });
    expect(plain.body.custom_fields.find((f: { id: number }) => f.id === 13)).toMatchObject({ type: 'string', type_detail: 'text_box', max_length: 10 });
    const withCalc = await emu().api('GET', '/member_layouts?get_calc_type=true');
    expect(withCalc.body.custom_fields.find((f: { id: number }) => f.id === 16)).toMatchObject({ type: 'calc', type_detail: 'calc_formula', read_only: true, enum: null });
    expect((await emu().api('GET', '/member_layouts?get_calc_type=maybe')).status).toBe(400);
  });
});

describe('GET /members (wire-format.md, Members)', () => {
  it('answers updated_at and members with department names root first, concurrent departments and custom fields', async () => {
    data().members_updated_at = '2026-03-31 09:00:00';
    addMember(emu(), 'A0001', {
      name: 'Aoki', department_code: 'S1', sub_department_codes: ['DEV'],
      custom_fields: { '11': ['A'], '12': ['Go', 'SQL'], '14': ['100'], '15': ['2.5'] },
    });
    const res = await emu().api('GET', '/members');
    expect(res.body.updated_at).toBe('2026-03-31 09:00:00');
    const m = res.body.member_data[0];
    expect(m.department).toEqual({ code: 'S1', name: 'Head office Sales Sales 1', names: ['Head office', 'Sales', 'Sales 1'] });
    expect(m.sub_departments).toEqual([{ code: 'DEV', name: 'Head office Development', names: ['Head office', 'Development'] }]);
    expect(m.custom_fields).toContainEqual({ id: 11, name: 'Blood type', values: ['A'] });
    expect(m.custom_fields).toContainEqual({ id: 12, name: 'Skills', values: ['Go', 'SQL'] });
    expect(m.custom_fields).toContainEqual({ id: 13, name: 'Nickname', values: [''] });
    // Formula parts are computed from the member's values (api-v2.md 2, custom field parts).
    expect(m.custom_fields).toContainEqual({ id: 16, name: 'Total', values: ['105'] });
  });

  it('reads a formula as blank when a number it refers to is missing or is not a number box', async () => {
    data().member_fields.push(field(21, 'Odd', 'calc_formula', { formula: '{13} + 1' }));
    addMember(emu(), 'A0002', { custom_fields: { '13': ['5'], '14': ['1'] } });
    const m = await listed('A0002');
    expect(m.custom_fields).toContainEqual({ id: 16, name: 'Total', values: [''] });
    expect(m.custom_fields).toContainEqual({ id: 21, name: 'Odd', values: [''] });
  });

  it('computes age and years_of_service on the service clock (2026-04-01 in these tests)', async () => {
    addMember(emu(), 'B1', { birthday: '1996-04-01', entered_date: '2016-04-02' });
    addMember(emu(), 'B2', { birthday: '1996-04-02', entered_date: '2016-04-01' });
    addMember(emu(), 'B3', { birthday: '', entered_date: '2010-04-01', retired_date: '2015-03-31' });
    addMember(emu(), 'B4', { birthday: '', entered_date: '' });
    expect(await listed('B1')).toMatchObject({ age: 30, years_of_service: '9年11ヵ月' });
    expect(await listed('B2')).toMatchObject({ age: 29, years_of_service: '10年0ヵ月' });
    // A retired member's years of service stop at the retired date.
    expect(await listed('B3')).toMatchObject({ age: null, years_of_service: '4年11ヵ月' });
    expect(await listed('B4')).toMatchObject({ age: null, years_of_service: '', department: null, sub_departments: [] });
  });
});

describe('the member id and face_image (wire-format.md, "Real-client facts")', () => {
  const ids = async (): Promise<Record<string, number>> =>
    Object.fromEntries(((await emu().api('GET', '/members')).body.member_data as { code: string; id: number }[]).map((m) => [m.code, m.id]));

  it('gives each member an integer id of its own, kept through every update, never reused after a delete, and no key of any request', async () => {
    expect((await runTask('POST', '/members', { member_data: [{ code: 'I1', name: 'One' }, { code: 'I2', name: 'Two' }] })).status).toBe('OK');
    const first = await ids();
    expect(Number.isInteger(first.I1) && Number.isInteger(first.I2)).toBe(true);
    expect(first.I1).not.toBe(first.I2);

    expect((await runTask('PUT', '/members', { member_data: [{ code: 'I1', name: 'One again' }] })).status).toBe('OK');
    // An id sent in a body changes nothing and names nobody: the code is the key.
    expect((await runTask('PATCH', '/members', { member_data: [{ code: 'I2', id: first.I1! + 100, name: 'Two again' }] })).status).toBe('OK');
    const stranger = await runTask('PATCH', '/members', { member_data: [{ code: 'NOBODY', id: first.I1, name: 'x' }] });
    expect(stranger.status).toBe('NG');
    expect((await runTask('PUT', '/members/overwrite', { member_data: [{ code: 'I1', name: 'One' }, { code: 'I2', name: 'Two' }, { code: 'I3', name: 'Three' }] })).status).toBe('OK');
    const second = await ids();
    expect([second.I1, second.I2]).toEqual([first.I1, first.I2]);
    expect(new Set(Object.values(second)).size).toBe(3);

    expect((await runTask('POST', '/members/delete', { codes: ['I3', 'I2'] })).status).toBe('OK');
    expect((await runTask('POST', '/members', { member_data: [{ code: 'I2', name: 'Two, back' }, { code: 'I4', name: 'Four' }] })).status).toBe('OK');
    const third = await ids();
    expect(third.I1).toBe(first.I1);
    // A member registered again after its delete is a new member: neither its old id nor I3's comes back.
    for (const code of ['I2', 'I4']) expect([first.I1, first.I2, second.I3], code).not.toContain(third[code]);
    expect(third.I2).not.toBe(third.I4);
  });

  it('answers face_image with the photo time when the member has a photo, null without, following each change', async () => {
    expect((await runTask('POST', '/members', { member_data: [{ code: 'F1', name: 'Photo' }, { code: 'F2', name: 'None' }] })).status).toBe('OK');
    expect((await listed('F1')).face_image).toBeNull();
    const photo = (seed: number) => async () => ({ code: 'F1', base64_face_image: (await jpeg(32, 32, seed)).toString('base64') });
    expect((await runTask('POST', '/members/face_image', { member_data: [await photo(1)()] })).status).toBe('OK');
    const registered = (await listed('F1')).face_image;
    const photos = (await emu().api('GET', '/members/face_image')).body.member_data as { code: string; updated_at: string }[];
    expect(registered).toEqual({ updated_at: photos.find((p) => p.code === 'F1')!.updated_at });
    expect(registered.updated_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect((await listed('F2')).face_image).toBeNull();

    await emu().control('POST', '/clock', { advance_seconds: 60 });
    expect((await runTask('PATCH', '/members/face_image', { member_data: [await photo(2)()] })).status).toBe('OK');
    const replaced = (await listed('F1')).face_image;
    expect(replaced.updated_at > registered.updated_at).toBe(true);
    expect(replaced.updated_at).toBe(companyOf(emu()).data.photos.F1!.updated_at);

    // Deleted and registered again, the member has no photo.
    expect((await runTask('POST', '/members/delete', { codes: ['F1'] })).status).toBe('OK');
    expect((await runTask('POST', '/members', { member_data: [{ code: 'F1', name: 'Photo, back' }] })).status).toBe('OK');
    expect((await listed('F1')).face_image).toBeNull();
  });
});

describe('POST /members: register (api-v2.md 4.4 Members 1)', () => {
  it('registers members with base information, departments and custom fields, and sends member_created', async () => {
    const task = await runTask('POST', '/members', {
      member_data: [
        {
          code: 'N1', name: 'New One', name_kana: 'ニュー', mail: 'n1@example.test', entered_date: '2026-04-01', retired_date: '',
          gender: '女性', birthday: '2000-01-31', department: { code: 'SALES' }, sub_departments: [{ code: 'DEV' }],
          custom_fields: [{ id: 11, values: ['B'] }, { id: 12, values: ['Rust', 'Go'] }, { id: 17, values: ['2026-01-01'] }],
        },
        { code: 'N2', name: 'New Two' },
      ],
    });
    expect(task).toMatchObject({ status: 'OK', messages: [] });
    const m = await listed('N1');
    expect(m).toMatchObject({ name: 'New One', gender: '女性', retired_date: '', age: 26, department: { code: 'SALES', names: ['Head office', 'Sales'] } });
    expect(m.custom_fields).toContainEqual({ id: 12, name: 'Skills', values: ['Rust', 'Go'] });
    expect(data().members.N2?.updated_at).toBe(data().members_updated_at);
    expect(events()).toEqual([{ event: 'member_created', codes: ['N1', 'N2'] }]);
    expect(deliveries[0]!.headers['service-token']).toBe('hook-secret');
  });

  it('moves members updated_at to the time of the change', async () => {
    data().members_updated_at = '2000-01-01 00:00:00';
    await runTask('POST', '/members', { member_data: [{ code: 'T1', name: 'Time' }] });
    expect((await emu().api('GET', '/members')).body.updated_at).not.toBe('2000-01-01 00:00:00');
  });

  it('ends NG naming an existing code, and registers none of the request (atomic)', async () => {
    addMember(emu(), 'E1');
    const task = await runTask('POST', '/members', { member_data: [{ code: 'OK1', name: 'Fine' }, { code: 'E1', name: 'Again' }] });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([expect.stringMatching(/^member E1: .*already exists/)]);
    expect(data().members.OK1).toBeUndefined();
    expect(data().members.E1!.name).toBe('Member E1');
    expect(deliveries).toHaveLength(0);
  });

  it('needs code and name, and a code only once per request', async () => {
    const task = await runTask('POST', '/members', {
      member_data: [{ code: '', name: 'Nameless code' }, { code: 'R1' }, { code: 'R2', name: 'x' }, { code: 'R2', name: 'y' }],
    });
    expect(task.status).toBe('NG');
    expect(task.messages).toContainEqual(expect.stringMatching(/^member_data\[0\]: code is required/));
    expect(task.messages).toContainEqual('member R1: name is required');
    expect(task.messages).toContainEqual(expect.stringMatching(/^member R2: appears more than once/));
    expect(task.messages).toHaveLength(3);
    expect(Object.keys(data().members)).toEqual([]);
  });

  it('refuses dates that are not real YYYY-MM-DD dates, accepts "" for retired_date, and checks gender', async () => {
    const task = await runTask('POST', '/members', {
      member_data: [
        { code: 'D1', name: 'x', entered_date: '2026-02-30' },
        { code: 'D2', name: 'x', birthday: '1990/01/01' },
        { code: 'D3', name: 'x', retired_date: '31-03-2026' },
        { code: 'D4', name: 'x', gender: 'male' },
        { code: 'D5', name: 'x', retired_date: '', gender: '' },
      ],
    });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'member D1: entered_date must be a date YYYY-MM-DD or "", got "2026-02-30"',
      'member D2: birthday must be a date YYYY-MM-DD or "", got "1990/01/01"',
      'member D3: retired_date must be a date YYYY-MM-DD or "", got "31-03-2026"',
      'member D4: gender must be one of 男性, 女性 or "", got "male"',
    ]);
  });

  it('refuses departments and concurrent departments that are not in the tree', async () => {
    const task = await runTask('POST', '/members', {
      member_data: [
        { code: 'P1', name: 'x', department: { code: 'NOPE' } },
        { code: 'P2', name: 'x', sub_departments: [{ code: 'DEV' }, { code: 'GONE' }] },
        { code: 'P3', name: 'x', sub_departments: [{ code: 'DEV' }, { code: 'DEV' }] },
      ],
    });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'member P1: department "NOPE" does not exist in the department tree',
      'member P2: sub_departments: department "GONE" does not exist in the department tree',
      'member P3: sub_departments names department "DEV" more than once',
    ]);
  });

  it('checks custom fields: known ids, choices of pulldown, radio and checkbox, numbers, dates, one value, formula parts', async () => {
    const task = await runTask('POST', '/members', {
      member_data: [
        { code: 'C1', name: 'x', custom_fields: [{ id: 999, values: ['a'] }] },
        { code: 'C2', name: 'x', custom_fields: [{ id: 11, values: ['AB'] }] },
        { code: 'C3', name: 'x', custom_fields: [{ id: 12, values: ['Go', 'Cobol'] }] },
        { code: 'C4', name: 'x', custom_fields: [{ id: 18, values: ['Evening'] }] },
        { code: 'C5', name: 'x', custom_fields: [{ id: 14, values: ['12k'] }] },
        { code: 'C6', name: 'x', custom_fields: [{ id: 17, values: ['2026-13-01'] }] },
        { code: 'C7', name: 'x', custom_fields: [{ id: 11, values: ['A', 'B'] }] },
        { code: 'C8', name: 'x', custom_fields: [{ id: 16, values: ['5'] }] },
        { code: 'C9', name: 'x', custom_fields: [{ id: 11, values: ['A'] }, { id: 11, values: ['B'] }] },
        { code: 'C10', name: 'x', custom_fields: [{ id: 12, values: ['Go', 'SQL'] }, { id: 18, values: ['Night'] }, { id: 14, values: ['-3.5'] }] },
        { code: 'C11', name: 'x', custom_fields: [{ id: 12, values: ['Go', 'Go'] }] },
      ],
    });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'member C1: custom field 999 does not exist among the member fields',
      'member C2: custom field 11 ("Blood type") has no choice "AB"; choices: A, B',
      'member C3: custom field 12 ("Skills") has no choice "Cobol"; choices: Go, Rust, SQL',
      'member C4: custom field 18 ("Shift") has no choice "Evening"; choices: Day, Night',
      'member C5: custom field 14 ("Salary") must be a number, got "12k"',
      'member C6: custom field 17 ("Joined group") must be a date YYYY-MM-DD, got "2026-13-01"',
      'member C7: custom field 11 ("Blood type") takes one value, got 2',
      'member C8: custom field 16 ("Total") is a formula part: it is recalculated by the service and cannot be updated directly',
      'member C9: custom field 11 is sent more than once',
      'member C11: custom field 12 ("Skills") names the same choice more than once',
    ]);
  });

  it('enforces the maximum lengths of the layout, naming the field and the limit', async () => {
    const task = await runTask('POST', '/members', {
      member_data: [
        { code: 'L1', name: 'n'.repeat(101) },
        { code: 'L'.repeat(51), name: 'x' },
        { code: 'L3', name: 'x', mail: `${'m'.repeat(95)}@x.test` },
        { code: 'L4', name: 'x', custom_fields: [{ id: 13, values: ['elevenchars'] }] },
        { code: 'L5', name: 'ä'.repeat(100), custom_fields: [{ id: 13, values: ['tencharsok'] }] },
      ],
    });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'member L1: name is 101 characters, over the maximum length of 100',
      `member ${'L'.repeat(51)}: code is 51 characters, over the maximum length of 50`,
      'member L3: mail is 102 characters, over the maximum length of 100',
      'member L4: custom field 13 ("Nickname") is 11 characters, over the maximum length of 10',
    ]);
  });

  it('takes a member code in a face photo part: an existing member or one registered by the same request', async () => {
    data().member_fields.push(field(20, 'Photo of', 'face_image'));
    addMember(emu(), 'F0');
    const task = await runTask('POST', '/members', {
      member_data: [
        { code: 'F1', name: 'x', custom_fields: [{ id: 20, values: ['F0'] }] },
        { code: 'F2', name: 'x', custom_fields: [{ id: 20, values: ['F1'] }] },
        { code: 'F3', name: 'x', custom_fields: [{ id: 20, values: ['NOBODY'] }] },
      ],
    });
    expect(task).toMatchObject({ status: 'NG', messages: ['member F3: custom field 20 ("Photo of") must name an existing member, got "NOBODY"'] });
  });

  it('needs every required custom field', async () => {
    data().member_fields.push(field(19, 'Grade', 'text_box', { required: true }));
    const task = await runTask('POST', '/members', {
      member_data: [{ code: 'Q1', name: 'x' }, { code: 'Q2', name: 'x', custom_fields: [{ id: 19, values: ['G3'] }] }],
    });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual(['member Q1: custom field 19 ("Grade") is required']);
  });

  it('in dry run ends OK and changes nothing, sending no webhook', async () => {
    const before = structuredClone(data().members_updated_at);
    const task = await runTask('POST', '/members', { member_data: [{ code: 'DRY', name: 'Dry' }] }, { 'Dry-Run': '1' });
    expect(task.status).toBe('OK');
    expect(data().members.DRY).toBeUndefined();
    expect(data().members_updated_at).toBe(before);
    expect(deliveries).toHaveLength(0);
  });

  it('in dry run still ends NG for a broken rule', async () => {
    addMember(emu(), 'E2');
    const task = await runTask('POST', '/members', { member_data: [{ code: 'E2', name: 'Dry' }] }, { 'Dry-Run': '1' });
    expect(task.status).toBe('NG');
    expect(task.messages[0]).toMatch(/^member E2: /);
  });

  it('answers a body without member_data or with an empty one with 400', async () => {
    expect((await emu().api('POST', '/members', {})).status).toBe(400);
    expect((await emu().api('POST', '/members', { member_data: [] })).status).toBe(400);
    expect((await emu().api('POST', '/members', { member_data: [{ name: 'no code' }] })).status).toBe(400);
  });
});

describe('PUT /members: bulk update (api-v2.md 4.4 Members 2)', () => {
  it('replaces each sent member as a whole: absent information is deleted; unsent members are unchanged', async () => {
    addMember(emu(), 'U1', { name_kana: 'ユー', gender: '男性', department_code: 'DEV', sub_department_codes: ['S1'], custom_fields: { '11': ['A'], '13': ['Nick'] } });
    addMember(emu(), 'U2', { name_kana: 'ツー' });
    const task = await runTask('PUT', '/members', { member_data: [{ code: 'U1', name: 'Renamed', custom_fields: [{ id: 13, values: ['New'] }] }] });
    expect(task.status).toBe('OK');
    const u1 = data().members.U1!;
    expect(u1).toMatchObject({ name: 'Renamed', name_kana: '', gender: '', mail: '', entered_date: '', department_code: null, sub_department_codes: [] });
    expect(u1.custom_fields).toEqual({ '13': ['New'] });
    expect(data().members.U2!.name_kana).toBe('ツー');
    expect(events()).toEqual([{ event: 'member_updated', codes: ['U1'] }]);
  });

  it('neither registers nor deletes: an unknown code ends NG and nothing changes', async () => {
    addMember(emu(), 'U3');
    const task = await runTask('PUT', '/members', { member_data: [{ code: 'U3', name: 'Changed' }, { code: 'NEW', name: 'x' }] });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([expect.stringMatching(/^member NEW: no member has this code/)]);
    expect(data().members.U3!.name).toBe('Member U3');
    expect(data().members.NEW).toBeUndefined();
  });

  it('ends NG when a sent member leaves out the required name (it would be deleted)', async () => {
    addMember(emu(), 'U4');
    const task = await runTask('PUT', '/members', { member_data: [{ code: 'U4', mail: 'x@example.test' }] });
    expect(task).toMatchObject({ status: 'NG', messages: ['member U4: name is required'] });
  });

  it('in dry run ends OK and changes nothing', async () => {
    addMember(emu(), 'U5', { name_kana: 'keep' });
    const task = await runTask('PUT', '/members', { member_data: [{ code: 'U5', name: 'x' }] }, { 'Dry-Run': '1' });
    expect(task.status).toBe('OK');
    expect(data().members.U5).toMatchObject({ name: 'Member U5', name_kana: 'keep' });
    expect(deliveries).toHaveLength(0);
  });
});

describe('PATCH /members: partial update (api-v2.md 4.4 Members 3)', () => {
  it('changes only the sent values; an empty string clears one', async () => {
    addMember(emu(), 'V1', { name_kana: 'ブイ', gender: '女性', birthday: '1990-01-01', department_code: 'DEV', custom_fields: { '11': ['A'], '13': ['Nick'] } });
    const task = await runTask('PATCH', '/members', {
      member_data: [{ code: 'V1', mail: 'v1@new.test', birthday: '', custom_fields: [{ id: 13, values: [''] }, { id: 18, values: ['Day'] }] }],
    });
    expect(task.status).toBe('OK');
    expect(data().members.V1).toMatchObject({
      name: 'Member V1', name_kana: 'ブイ', gender: '女性', mail: 'v1@new.test', birthday: '', department_code: 'DEV',
      custom_fields: { '11': ['A'], '18': ['Day'] },
    });
    expect(events()).toEqual([{ event: 'member_updated', codes: ['V1'] }]);
  });

  it('clears departments with an empty code and concurrent departments with an empty list', async () => {
    addMember(emu(), 'V2', { department_code: 'DEV', sub_department_codes: ['S1'] });
    await runTask('PATCH', '/members', { member_data: [{ code: 'V2', department: { code: '' }, sub_departments: [] }] });
    expect(data().members.V2).toMatchObject({ department_code: null, sub_department_codes: [] });
  });

  it('ends NG for an unknown code, for clearing the required name, and for a bad value, changing nothing', async () => {
    addMember(emu(), 'V3');
    const task = await runTask('PATCH', '/members', {
      member_data: [{ code: 'V3', name: '' }, { code: 'V404', mail: 'x' }, { code: 'V3b', name: 'x' }],
    });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'member V3: name is required',
      expect.stringMatching(/^member V404: no member has this code/),
      expect.stringMatching(/^member V3b: no member has this code/),
    ]);
    expect(data().members.V3!.name).toBe('Member V3');
  });

  it('checks required fields only when it sends them', async () => {
    data().member_fields.push(field(19, 'Grade', 'text_box', { required: true }));
    addMember(emu(), 'V5');
    expect((await runTask('PATCH', '/members', { member_data: [{ code: 'V5', mail: 'v5@new.test' }] })).status).toBe('OK');
    const cleared = await runTask('PATCH', '/members', { member_data: [{ code: 'V5', custom_fields: [{ id: 19, values: [''] }] }] });
    expect(cleared).toMatchObject({ status: 'NG', messages: ['member V5: custom field 19 ("Grade") is required'] });
  });

  it('in dry run ends OK and changes nothing', async () => {
    addMember(emu(), 'V4');
    const task = await runTask('PATCH', '/members', { member_data: [{ code: 'V4', name: 'Dry' }] }, { 'Dry-Run': '1' });
    expect(task.status).toBe('OK');
    expect(data().members.V4!.name).toBe('Member V4');
  });
});

describe('PUT /members/overwrite: replace all (api-v2.md 4.4 Members 4)', () => {
  it('registers unknown codes, updates known ones, deletes known ones left out, and sends all three events', async () => {
    addMember(emu(), 'W1', { name_kana: 'old' });
    addMember(emu(), 'W2');
    addMember(emu(), 'W3');
    const task = await runTask('PUT', '/members/overwrite', { member_data: [{ code: 'W1', name: 'Updated' }, { code: 'W9', name: 'Created' }] });
    expect(task.status).toBe('OK');
    expect(Object.keys(data().members).sort()).toEqual(['W1', 'W9']);
    expect(data().members.W1).toMatchObject({ name: 'Updated', name_kana: '' });
    expect(events().sort((a, b) => a.event.localeCompare(b.event))).toEqual([
      { event: 'member_created', codes: ['W9'] },
      { event: 'member_deleted', codes: ['W2', 'W3'] },
      { event: 'member_updated', codes: ['W1'] },
    ]);
  });

  it('keeps a member whose registration was not complete when the request came', async () => {
    addMember(emu(), 'K1');
    const clock = emu().emulator.clock;
    // Freeze service time so that both tasks wait; they then run in order of creation.
    clock.setSpeed(1e-6);
    try {
      const register = await emu().api('POST', '/members', { member_data: [{ code: 'LATE', name: 'Late' }] });
      const replace = await emu().api('PUT', '/members/overwrite', { member_data: [{ code: 'K1', name: 'Kept' }] });
      clock.advance(5);
      clock.setSpeed(1);
      expect((await emu().waitTask(register.body.task_id)).status).toBe('OK');
      expect((await emu().waitTask(replace.body.task_id)).status).toBe('OK');
    } finally {
      clock.setSpeed(1);
    }
    expect(Object.keys(data().members).sort()).toEqual(['K1', 'LATE']);
  });

  it('ends NG for a new member without its required name, deleting nobody', async () => {
    addMember(emu(), 'W4');
    const task = await runTask('PUT', '/members/overwrite', { member_data: [{ code: 'W5' }] });
    expect(task).toMatchObject({ status: 'NG', messages: ['member W5: name is required'] });
    expect(data().members.W4).toBeDefined();
  });

  it('in dry run ends OK and changes nothing', async () => {
    addMember(emu(), 'W6');
    const task = await runTask('PUT', '/members/overwrite', { member_data: [{ code: 'W7', name: 'x' }] }, { 'Dry-Run': '1' });
    expect(task.status).toBe('OK');
    expect(Object.keys(data().members)).toEqual(['W6']);
    expect(deliveries).toHaveLength(0);
  });
});

describe('POST /members/delete (api-v2.md 4.4 Members 5)', () => {
  function arrangeUsers(): void {
    const company = companyOf(emu());
    company.data.roles = [{ id: 1, name: 'Administrator', type: 'Adm' }, { id: 2, name: 'Staff', type: 'General' }];
    const user = (id: number, member_code: string, role_id: number) => ({
      id, email: `u${id}@example.test`, member_code, password: 'secret', role_id, is_active: true, password_locked: false,
      use_smartphone: false, use_native_app: false, use_secure: false, last_login_at: null,
    });
    company.data.users = [user(1, 'X1', 1), user(2, 'X2', 2), user(3, 'X3', 2)];
  }

  it('deletes the members and a linked general user; an administrator user only loses the link', async () => {
    addMember(emu(), 'X1');
    addMember(emu(), 'X2');
    addMember(emu(), 'X3');
    arrangeUsers();
    const task = await runTask('POST', '/members/delete', { codes: ['X1', 'X2'] });
    expect(task.status).toBe('OK');
    expect(Object.keys(data().members)).toEqual(['X3']);
    expect(data().users.map((u) => [u.id, u.member_code])).toEqual([[1, null], [3, 'X3']]);
    expect(events()).toEqual([{ event: 'member_deleted', codes: ['X1', 'X2'] }]);
  });

  it('removes the member photo and sheet records, releasing their files', async () => {
    addMember(emu(), 'Y1');
    addMember(emu(), 'Y2');
    setPhoto(emu(), 'Y1', await jpeg());
    addSheet(emu(), { id: 5, name: 'Docs', record_type: 1, fields: [field(51, 'File', 'attach_file'), field(52, 'Note', 'text_box')] });
    const company = companyOf(emu());
    const stored = company.storeFile(Buffer.from('hello'), 'a.txt');
    company.data.sheets['5']!.records = { Y1: [{ values: { '52': ['n'] }, files: { '51': stored } }], Y2: [{ values: { '52': ['m'] }, files: {} }] };
    company.data.sheets['5']!.updated_at = '2000-01-01 00:00:00';
    const photoBlob = company.data.photos.Y1!.blob;
    const task = await runTask('POST', '/members/delete', { codes: ['Y1'] });
    expect(task.status).toBe('OK');
    expect(company.data.photos.Y1).toBeUndefined();
    expect(Object.keys(company.data.sheets['5']!.records)).toEqual(['Y2']);
    expect(company.data.sheets['5']!.updated_at).toBe(company.data.members_updated_at);
    expect(company.blobs.get(photoBlob)?.releasedAt).toBeDefined();
    expect(company.blobs.get(stored.blob)?.releasedAt).toBeDefined();
    const state = await emu().control('GET', '/state');
    expect(state.members.map((m: { code: string }) => m.code)).toEqual(['Y2']);
  });

  it('leaves no department leader or extended access setting pointing at a deleted member or user', async () => {
    addMember(emu(), 'X1');
    addMember(emu(), 'X2');
    addMember(emu(), 'X3');
    arrangeUsers();
    data().departments[1]!.leader_member_code = 'X2';
    data().departments[2]!.leader_member_code = 'X3';
    data().advanced_permissions = {
      member: [{ user_id: 1, add_codes: ['X2', 'X3'], exclusion_codes: ['X2'] }, { user_id: 2, add_codes: ['X3'], exclusion_codes: [] }],
      department: [{ user_id: 2, add_codes: ['DEV'], exclusion_codes: [] }, { user_id: 3, add_codes: ['DEV'], exclusion_codes: [] }],
    };
    expect((await runTask('POST', '/members/delete', { codes: ['X2'] })).status).toBe('OK');
    expect(data().departments.map((d) => d.leader_member_code)).toEqual([null, null, 'X3', null]);
    // User 2 (general, linked to X2) went with the member, and so did its settings.
    expect(data().advanced_permissions).toEqual({
      member: [{ user_id: 1, add_codes: ['X3'], exclusion_codes: [] }],
      department: [{ user_id: 3, add_codes: ['DEV'], exclusion_codes: [] }],
    });
  });

  it('ends NG naming an unknown code and deletes nothing', async () => {
    addMember(emu(), 'Z1');
    const task = await runTask('POST', '/members/delete', { codes: ['Z1', 'Z404'] });
    expect(task).toMatchObject({ status: 'NG', messages: ['member Z404: no member has this code'] });
    expect(data().members.Z1).toBeDefined();
    expect(deliveries).toHaveLength(0);
  });

  it('in dry run ends OK and deletes nothing', async () => {
    addMember(emu(), 'Z2');
    arrangeUsers();
    data().users[1]!.member_code = 'Z2';
    const task = await runTask('POST', '/members/delete', { codes: ['Z2'] }, { 'Dry-Run': '1' });
    expect(task.status).toBe('OK');
    expect(data().members.Z2).toBeDefined();
    expect(data().users).toHaveLength(3);
    expect(deliveries).toHaveLength(0);
  });

  it('requires codes, with at least one element (400)', async () => {
    expect((await emu().api('POST', '/members/delete', {})).status).toBe(400);
    expect((await emu().api('POST', '/members/delete', { codes: [] })).status).toBe(400);
  });

  it('replace all deletes with the same effects on users', async () => {
    addMember(emu(), 'X1');
    addMember(emu(), 'X2');
    addMember(emu(), 'X3');
    arrangeUsers();
    const task = await runTask('PUT', '/members/overwrite', { member_data: [{ code: 'X3', name: 'Stays' }] });
    expect(task.status).toBe('OK');
    expect(data().users.map((u) => [u.id, u.member_code])).toEqual([[1, null], [3, 'X3']]);
  });
});
