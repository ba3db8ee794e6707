/**
 * Each fact of wire-format.md "Real-client facts", checked against the emulator's answers for the
 * sample company (and, where the sample has no case of it, a generated company or a field added
 * here). The clock stands at 2026-04-01 10:00:00 service time.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addSheet, companyOf, field } from '../helpers/fixtures.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10_000 } });
const generated = useEmulator({ generate: { members: 12, seed: 3 } });

const TYPES = ['string', 'number', 'date', 'enum', 'calc', 'department', 'department[]'];
const TYPE_DETAILS = [
  'text_box', 'text_area', 'number_box', 'pull_down', 'radio_button', 'check_box', 'link', 'date', 'year_month',
  'attach_file', 'face_image', 'calc_formula',
];

type Field = { id: number; name: string; type: string; type_detail: string; read_only?: boolean; enum: unknown };
type Values = { id: number; values: string[] };

const get = async (path: string, headers: Record<string, string> = {}, on = emu) => {
  const res = await on().api('GET', path, undefined, headers);
  expect(res.status, `GET ${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
};

async function everyLayoutField(on = emu): Promise<Field[]> {
  const sheets = (await get('/sheet_layouts?get_calc_type=true', {}, on)).sheets as { id: number; custom_fields: Field[] }[];
  const one = await Promise.all(sheets.map(async (s) => (await get(`/sheet_layouts/${s.id}?get_calc_type=true`, {}, on)).custom_fields as Field[]));
  const member = (await get('/member_layouts?get_calc_type=true', {}, on)).custom_fields as Field[];
  return [...sheets.flatMap((s) => s.custom_fields), ...one.flat(), ...member];
}

describe('layouts: type, type_detail, read_only', () => {
  it('sends only the real type and type_detail values, in sheet layouts and member layout custom fields', async () => {
    for (const on of [emu, generated]) {
      const fields = await everyLayoutField(on);
      expect(fields.length).toBeGreaterThan(5);
      for (const f of fields) {
        expect(TYPES, `field ${f.id} type`).toContain(f.type);
        expect(TYPE_DETAILS, `field ${f.id} type_detail`).toContain(f.type_detail);
      }
    }
    const member = (await get('/member_layouts')) as Record<string, { type: string }>;
    for (const key of ['code', 'name', 'entered_date', 'gender', 'department', 'sub_departments']) expect(TYPES).toContain(member[key]!.type);
  });

  it('spells the choice parts pull_down, radio_button and check_box, and a file part attach_file', async () => {
    addSheet(emu(), {
      id: 9, name: 'Choices', record_type: 0,
      fields: [
        field(9001, 'Size', 'pulldown', { options: [{ id: 901, name: 'S' }] }),
        field(9002, 'Shift', 'radio', { options: [{ id: 902, name: 'Day' }] }),
        field(9003, 'Tags', 'checkbox', { options: [{ id: 903, name: 'x' }] }),
        field(9004, 'Scan', 'attach_file'),
        field(9005, 'Photo', 'face_image'),
      ],
    });
    try {
      const layout = await get('/sheet_layouts/9');
      expect(layout.custom_fields.map((f: Field) => [f.type, f.type_detail])).toEqual([
        ['enum', 'pull_down'], ['enum', 'radio_button'], ['enum', 'check_box'], ['string', 'attach_file'], ['string', 'face_image'],
      ]);
    } finally {
      delete companyOf(emu()).data.sheets['9'];
    }
  });

  it('marks formula fields read_only, with enum [] in sheet layouts, and shows them only with get_calc_type=true', async () => {
    const withCalc = (await get('/sheet_layouts/2?get_calc_type=true')).custom_fields as Field[];
    const formula = withCalc.find((f) => f.type_detail === 'calc_formula');
    expect(formula).toMatchObject({ id: 1305, type: 'calc', read_only: true, enum: [] });
    const listed = (await get('/sheet_layouts?get_calc_type=true')).sheets as { id: number; custom_fields: Field[] }[];
    expect(listed.find((s) => s.id === 2)!.custom_fields.find((f) => f.id === 1305)!.enum).toEqual([]);
    for (const f of withCalc.filter((x) => x.type !== 'calc')) expect(f.read_only, `field ${f.id}`).toBeUndefined();
    const plain = (await get('/sheet_layouts/2')).custom_fields as Field[];
    expect(plain.some((f) => f.type === 'calc')).toBe(false);
  });
});

describe('GET /members', () => {
  const members = async () => (await get('/members')).member_data as Record<string, any>[];
  const one = async (code: string) => (await members()).find((m) => m.code === code)!;

  it('names each department by its whole path, root first, joined by one space; names is that path', async () => {
    expect((await one('A0004')).department).toEqual({
      code: '1110',
      name: '本社 / Head Office 営業部 / Sales 東京営業課 / Tokyo Sales',
      names: ['本社 / Head Office', '営業部 / Sales', '東京営業課 / Tokyo Sales'],
    });
    const concurrent = await one('A0014');
    expect(concurrent.department.name).toBe('本社 / Head Office 開発部 / Engineering Mobile Team');
    expect(concurrent.sub_departments).toEqual([{ code: '1100', name: '本社 / Head Office 営業部 / Sales', names: ['本社 / Head Office', '営業部 / Sales'] }]);
    for (const m of await members()) {
      for (const d of [m.department, ...m.sub_departments].filter(Boolean)) expect(d.name).toBe(d.names.join(' '));
    }
  });

  it('gives years_of_service as a string of years then months, age as an integer, retired_date "" until retirement', async () => {
    expect(await one('A0001')).toMatchObject({ years_of_service: '36年0ヵ月', age: 60, retired_date: '' });
    expect(await one('A0014')).toMatchObject({ years_of_service: '5年2ヵ月' });
    // Retired on 2025-03-31: the years stop there.
    expect(await one('A0024')).toMatchObject({ years_of_service: '31年11ヵ月', retired_date: '2025-03-31' });
    for (const m of await members()) {
      expect(m.years_of_service, m.code).toMatch(/^\d+年\d{1,2}ヵ月$/);
      expect(Number.isInteger(m.age), m.code).toBe(true);
      expect(typeof m.retired_date).toBe('string');
    }
  });

  it('gives each member the service\'s integer id, one of its own', async () => {
    for (const on of [emu, generated]) {
      const list = (await get('/members', {}, on)).member_data as { code: string; id: unknown }[];
      for (const m of list) expect(Number.isInteger(m.id), m.code).toBe(true);
      expect(new Set(list.map((m) => m.id)).size).toBe(list.length);
    }
  });

  it('gives face_image the photo time for a member with a photo, null for one without', async () => {
    const photos = (await get('/members/face_image')).member_data as { code: string; updated_at: string }[];
    const list = await members();
    const without = list.filter((m) => !photos.some((p) => p.code === m.code));
    expect(photos.length).toBeGreaterThan(0);
    expect(without.length).toBeGreaterThan(0);
    for (const p of photos) expect(list.find((m) => m.code === p.code)!.face_image, p.code).toEqual({ updated_at: p.updated_at });
    for (const m of without) expect(m.face_image, m.code).toBeNull();
  });

  it('gives some members of a generated company concurrent departments, named by their paths', async () => {
    const list = (await get('/members', {}, generated)).member_data as { code: string; department: { code: string }; sub_departments: { code: string; name: string; names: string[] }[] }[];
    const concurrent = list.filter((m) => m.sub_departments.length > 0);
    expect(concurrent.length).toBeGreaterThanOrEqual(2);
    for (const m of concurrent) {
      const codes = m.sub_departments.map((d) => d.code);
      expect(codes, m.code).not.toContain(m.department.code);
      expect(new Set(codes).size).toBe(codes.length);
      for (const d of m.sub_departments) expect(d.name).toBe(d.names.join(' '));
    }
  });

  it('answers [""] for an empty custom field of a member, never []', async () => {
    const res = await emu().api('POST', '/members', { member_data: [{ code: 'Z0001', name: 'Empty Fields', department: { code: '1000' } }] });
    expect((await emu().waitTask(res.body.task_id)).status).toBe('OK');
    const fields = (await one('Z0001')).custom_fields as Values[];
    expect(fields.map((f) => f.values)).toEqual([[''], [''], ['']]);
    for (const m of await members()) for (const f of m.custom_fields as Values[]) expect(f.values.length, `${m.code} ${f.id}`).toBeGreaterThan(0);
  });
});

describe('sheets: values never empty', () => {
  it('lists one record per member on a single-record sheet, [""] in each empty field, and [""] in multiple-record sheets too', async () => {
    const single = await get('/sheets/1?get_calc_type=true');
    const members = (await get('/members')).member_data as { code: string }[];
    expect(single.member_data.map((m: { code: string }) => m.code)).toEqual(members.map((m) => m.code).sort());
    for (const m of single.member_data) expect(m.records, m.code).toHaveLength(1);
    // A0017 has no record at all, A0026 a record without a file.
    const noRecord = single.member_data.find((m: { code: string }) => m.code === 'A0017').records[0].custom_fields as Values[];
    expect(noRecord.map((f) => f.values)).toEqual([[''], [''], [''], ['']]);
    const noFile = single.member_data.find((m: { code: string }) => m.code === 'A0026').records[0].custom_fields as Values[];
    expect(noFile.find((f) => f.id === 1204)!.values).toEqual(['']);
    const multi = await get('/sheets/2?get_calc_type=true');
    let empty = 0;
    for (const sheet of [single, multi]) {
      for (const m of sheet.member_data) {
        for (const r of m.records) {
          for (const f of r.custom_fields as Values[]) {
            expect(f.values.length, `${m.code} ${f.id}`).toBeGreaterThan(0);
            if (f.values[0] === '') empty += 1;
          }
        }
      }
    }
    expect(empty).toBeGreaterThan(0);
  });
});

describe('roles', () => {
  it('types a role "Adm" for administrators and "一般" for the others, in the roles list and in user.role', async () => {
    const roles = (await get('/roles')).role_data as { id: number; type: string }[];
    expect(roles.map((r) => r.type)).toEqual(['Adm', '一般', '一般']);
    const users = (await get('/users')).user_data as { role: { id: number; type: string } }[];
    for (const u of users) expect(u.role.type).toBe(roles.find((r) => r.id === u.role.id)!.type);
    expect((await get('/users/1')).role.type).toBe('Adm');
    expect(((await get('/roles', {}, generated)).role_data as { type: string }[]).every((r) => r.type === 'Adm' || r.type === '一般')).toBe(true);
  });
});

describe('Dry-Run on reads', () => {
  const READS = [
    '/member_layouts', '/members', '/members/face_image', '/sheet_layouts', '/sheet_layouts/1', '/sheets/2', '/sheets/1/custom_fields/1204/file',
    '/departments', '/users', '/users/1', '/roles', '/advanced_permissions/member', '/advanced_permissions/department', '/enum_options',
    '/enum_options/1101', '/webhook',
  ];

  it('ignores 0 and 1 on every read and refuses any other value with 400', async () => {
    for (const path of READS) {
      const plain = await get(path);
      for (const value of ['0', '1']) {
        const answer = await get(path, { 'Dry-Run': value });
        // URLs are signed at each listing; everything else is the same answer.
        expect(JSON.stringify(answer).replace(/Expires=\d+&Signature=[^&"]+/g, ''), `${path} Dry-Run ${value}`)
          .toBe(JSON.stringify(plain).replace(/Expires=\d+&Signature=[^&"]+/g, ''));
      }
      const bad = await emu().api('GET', path, undefined, { 'Dry-Run': 'yes' });
      expect(bad.status, path).toBe(400);
      expect(bad.body.errors[0]).toContain('Dry-Run');
    }
    const write = await emu().api('POST', '/members', { member_data: [{ code: 'Z0009', name: 'Dry' }] }, { 'Dry-Run': '1' });
    const task = await emu().api('GET', `/tasks/${write.body.task_id}`, undefined, { 'Dry-Run': '1' });
    expect(task.status).toBe(200);
  });

  it('refuses Dry-Run: 1 on the access-settings replacement, which has no dry-run mode, and changes nothing', async () => {
    const before = await get('/advanced_permissions/member');
    const res = await emu().api('PUT', '/advanced_permissions/member', { advanced_permission_data: [] }, { 'Dry-Run': '1' });
    expect(res.status).toBe(400);
    expect(await get('/advanced_permissions/member')).toEqual(before);
  });
});

describe('tokens, URLs, masters, departments', () => {
  it('answers the token lifetime as expire_in', async () => {
    const res = await fetch(`${emu().url}/api/v2.0/token`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from('demo-key:demo-secret').toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ token_type: 'Bearer', expire_in: 3600 });
    expect(body.expires_in).toBeUndefined();
  });

  it('hands out download URLs signed like a CDN: Expires, Signature and Key-Pair-Id in the query', async () => {
    const photos = (await get('/members/face_image')).member_data as { download_url: string }[];
    const files = (await get('/sheets/2/custom_fields/1306/file')).member_data as { records: { download_url: string }[] }[];
    for (const url of [photos[0]!.download_url, files[0]!.records[0]!.download_url]) {
      expect(new URL(url).search).toMatch(/^\?Expires=\d+&Signature=[^&]+&Key-Pair-Id=[^&]+$/);
      expect((await fetch(url)).status).toBe(200);
    }
  });

  it('keeps the master id a string, as api-v2.md types it', async () => {
    const list = (await get('/enum_options')).custom_field_data as { id: unknown }[];
    expect(list.length).toBeGreaterThan(0);
    for (const m of list) expect(typeof m.id).toBe('string');
  });

  it('answers a department memo as it was sent, "" or null', async () => {
    const tree = (await get('/departments')).department_data as { code: string; memo: string | null }[];
    expect(tree.find((d) => d.code === '1210')!.memo).toBeNull();
    expect(tree.find((d) => d.code === '1100')!.memo).toBe('');
    expect(tree.find((d) => d.code === '1000')!.memo).toBe('東京都千代田区');
    // Sent back with the two forms swapped, each is answered as sent.
    const swapped = tree.map((d) => (d.code === '1210' ? { ...d, memo: '' } : d.code === '1100' ? { ...d, memo: null } : d));
    const put = await emu().api('PUT', '/departments', { department_data: swapped });
    expect((await emu().waitTask(put.body.task_id)).status).toBe('OK');
    expect((await get('/departments')).department_data).toEqual(swapped);
  });
});
