import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addMember, addSheet, companyOf, field } from '../helpers/fixtures.js';
import type { User } from '../../src/emulator/model.js';
import { MAX_ADVANCED_PERMISSION_CODES } from '../../src/spec/limits.js';

// Many task operations in one file: the 5-a-minute update limit is the server's, tested elsewhere.
const emu = useEmulator({ limits: { updatesPerMinute: 10_000 } });

const company = () => companyOf(emu());
const data = () => company().data;

function arrangeUser(id: number): void {
  const user: User = {
    id, email: `user${id}@example.test`, member_code: null, password: 'pw', role_id: 2, is_active: true,
    password_locked: false, use_smartphone: false, use_native_app: false, use_secure: false, last_login_at: null,
  };
  data().users.push(user);
}

/** Sends a task operation and waits for its task to end. */
async function task(method: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await emu().api(method, path, body, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(Object.keys(res.body)).toEqual(['task_id']);
  return emu().waitTask(res.body.task_id);
}

const memberCodes = (n: number, prefix = 'P'): string[] => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);

beforeAll(() => {
  data().roles.push({ id: 2, name: 'Staff', type: 'General' }, { id: 1, name: 'Administrator', type: 'Adm' });
  for (const id of [1, 2, 3]) arrangeUser(id);
  for (const code of ['M001', 'M002', 'M003', 'M004']) addMember(emu(), code);
  for (const code of ['D1', 'D2']) {
    data().departments.push({ code, name: `Dept ${code}`, parent_code: null, leader_member_code: null, order: null, memo: '' });
  }
});

describe('GET /roles (wire-format.md, Users)', () => {
  it('answers role_data with id, name and type', async () => {
    const res = await emu().api('GET', '/roles');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      role_data: [{ id: 1, name: 'Administrator', type: 'Adm' }, { id: 2, name: 'Staff', type: '一般' }],
    });
  });
});

describe('extended access settings (api-v2.md 4.4 Extended access settings)', () => {
  it('answers advanced_permission_data for member and department, empty at first', async () => {
    for (const type of ['member', 'department']) {
      const res = await emu().api('GET', `/advanced_permissions/${type}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ advanced_permission_data: [] });
    }
  });

  it('answers 400 for another advanced_type, on GET and PUT', async () => {
    const get = await emu().api('GET', '/advanced_permissions/group');
    expect(get.status).toBe(400);
    expect(get.body.errors[0]).toMatch(/advanced_type must be member or department/);
    const put = await emu().api('PUT', '/advanced_permissions/group', { advanced_permission_data: [] });
    expect(put.status).toBe(400);
  });

  it('replaces every setting of the kind with the request data', async () => {
    const first = await task('PUT', '/advanced_permissions/member', {
      advanced_permission_data: [
        { user_id: 1, add_codes: ['M001', 'M002'], exclusion_codes: ['M003'] },
        { user_id: 2, add_codes: ['M004'], exclusion_codes: [] },
      ],
    });
    expect(first).toMatchObject({ status: 'OK', messages: [] });
    const second = await task('PUT', '/advanced_permissions/member', {
      advanced_permission_data: [{ user_id: 3, add_codes: [], exclusion_codes: ['M001'] }],
    });
    expect(second.status).toBe('OK');
    const res = await emu().api('GET', '/advanced_permissions/member');
    expect(res.body).toEqual({ advanced_permission_data: [{ user_id: 3, add_codes: [], exclusion_codes: ['M001'] }] });
    // The other kind is untouched.
    expect((await emu().api('GET', '/advanced_permissions/department')).body.advanced_permission_data).toEqual([]);
  });

  it('takes department codes for the department kind', async () => {
    const ok = await task('PUT', '/advanced_permissions/department', {
      advanced_permission_data: [{ user_id: 1, add_codes: ['D1'], exclusion_codes: ['D2'] }],
    });
    expect(ok.status).toBe('OK');
    expect(data().advanced_permissions.department).toEqual([{ user_id: 1, add_codes: ['D1'], exclusion_codes: ['D2'] }]);
    const memberCode = await task('PUT', '/advanced_permissions/department', {
      advanced_permission_data: [{ user_id: 1, add_codes: ['M001'], exclusion_codes: [] }],
    });
    expect(memberCode.status).toBe('NG');
    expect(memberCode.messages).toEqual(['user 1: add_codes: no department has the code "M001"']);
  });

  it('ends NG naming the user when a code is not a member code, and changes nothing', async () => {
    const before = structuredClone(data().advanced_permissions.member);
    const res = await task('PUT', '/advanced_permissions/member', {
      advanced_permission_data: [
        { user_id: 1, add_codes: ['M001'], exclusion_codes: [] },
        { user_id: 2, add_codes: [], exclusion_codes: ['D1', 'X9'] },
      ],
    });
    expect(res.status).toBe('NG');
    expect(res.messages).toEqual(['user 2: exclusion_codes: no member has the code "D1", "X9"']);
    expect(data().advanced_permissions.member).toEqual(before);
  });

  it('ends NG for a user_id that names no user', async () => {
    const res = await task('PUT', '/advanced_permissions/member', {
      advanced_permission_data: [{ user_id: 99, add_codes: ['M001'], exclusion_codes: [] }],
    });
    expect(res.status).toBe('NG');
    expect(res.messages).toEqual(['user 99: no user has this id']);
  });

  it('ends NG for a user twice, a code twice in one list, and a code both added and excluded', async () => {
    const twice = await task('PUT', '/advanced_permissions/member', {
      advanced_permission_data: [
        { user_id: 1, add_codes: ['M001'], exclusion_codes: [] },
        { user_id: 1, add_codes: ['M002'], exclusion_codes: [] },
      ],
    });
    expect(twice.status).toBe('NG');
    expect(twice.messages).toEqual(['user 1: appears more than once in advanced_permission_data']);
    const codes = await task('PUT', '/advanced_permissions/member', {
      advanced_permission_data: [{ user_id: 2, add_codes: ['M001', 'M001', 'M002'], exclusion_codes: ['M002'] }],
    });
    expect(codes.status).toBe('NG');
    expect(codes.messages).toEqual([
      'user 2: add_codes names "M001" more than once',
      'user 2: "M002" is in both add_codes and exclusion_codes',
    ]);
  });

  it('allows 30,000 additions and 30,000 exclusions per user for member settings, and ends NG naming the user above', async () => {
    const limit = MAX_ADVANCED_PERMISSION_CODES.member;
    const codes = memberCodes(2 * limit + 1);
    for (const code of codes) addMember(emu(), code);
    try {
      const add = codes.slice(0, limit);
      const exclude = codes.slice(limit, 2 * limit);
      const atLimit = await task('PUT', '/advanced_permissions/member', {
        advanced_permission_data: [{ user_id: 1, add_codes: add, exclusion_codes: exclude }],
      });
      expect(atLimit.status).toBe('OK');
      const overAdd = await task('PUT', '/advanced_permissions/member', {
        advanced_permission_data: [{ user_id: 2, add_codes: codes.slice(0, limit + 1), exclusion_codes: [] }],
      });
      expect(overAdd.status).toBe('NG');
      expect(overAdd.messages).toEqual([`user 2: add_codes holds ${limit + 1} codes, over the limit of ${limit} per user for member settings`]);
      const overExclude = await task('PUT', '/advanced_permissions/member', {
        advanced_permission_data: [{ user_id: 3, add_codes: [], exclusion_codes: codes.slice(limit) }],
      });
      expect(overExclude.status).toBe('NG');
      expect(overExclude.messages[0]).toMatch(/^user 3: exclusion_codes holds 30001 codes/);
      expect(data().advanced_permissions.member[0]!.add_codes).toHaveLength(limit);
    } finally {
      for (const code of codes) delete data().members[code];
      data().advanced_permissions.member = [];
    }
  });

  it('allows 1,000 additions and 1,000 exclusions per user for department settings, and ends NG above', async () => {
    const limit = MAX_ADVANCED_PERMISSION_CODES.department;
    const codes = memberCodes(2 * limit + 1, 'DEP');
    for (const code of codes) data().departments.push({ code, name: code, parent_code: null, leader_member_code: null, order: null, memo: '' });
    const atLimit = await task('PUT', '/advanced_permissions/department', {
      advanced_permission_data: [{ user_id: 1, add_codes: codes.slice(0, limit), exclusion_codes: codes.slice(limit, 2 * limit) }],
    });
    expect(atLimit.status).toBe('OK');
    const overAdd = await task('PUT', '/advanced_permissions/department', {
      advanced_permission_data: [{ user_id: 2, add_codes: codes.slice(0, limit + 1), exclusion_codes: [] }],
    });
    expect(overAdd.messages).toEqual([`user 2: add_codes holds ${limit + 1} codes, over the limit of ${limit} per user for department settings`]);
    const overExclude = await task('PUT', '/advanced_permissions/department', {
      advanced_permission_data: [{ user_id: 3, add_codes: [], exclusion_codes: codes.slice(limit) }],
    });
    expect(overExclude.status).toBe('NG');
    expect(overExclude.messages).toEqual([`user 3: exclusion_codes holds ${limit + 1} codes, over the limit of ${limit} per user for department settings`]);
    expect(data().advanced_permissions.department).toHaveLength(1);
  });

  it('an empty advanced_permission_data replaces every setting with none', async () => {
    const res = await task('PUT', '/advanced_permissions/department', { advanced_permission_data: [] });
    expect(res.status).toBe('OK');
    expect(data().advanced_permissions.department).toEqual([]);
  });

  it('answers 400 for a body of the wrong shape', async () => {
    expect((await emu().api('PUT', '/advanced_permissions/member', {})).status).toBe(400);
    const wrong = await emu().api('PUT', '/advanced_permissions/member', {
      advanced_permission_data: [{ user_id: '1', add_codes: 'M001', exclusion_codes: [] }],
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors.join(' ')).toMatch(/user_id/);
    expect(wrong.body.errors.join(' ')).toMatch(/add_codes/);
  });

  it('has no dry-run mode: Dry-Run: 1 is refused rather than replacing everything', async () => {
    const res = await emu().api('PUT', '/advanced_permissions/member', { advanced_permission_data: [] }, { 'Dry-Run': '1' });
    expect(res.status).toBe(400);
  });
});

describe('masters (api-v2.md 4.4 Masters)', () => {
  beforeAll(() => {
    data().member_fields.push(
      field(101, 'Blood type', 'pulldown', { options: [{ id: 1, name: 'A' }, { id: 2, name: 'B' }, { id: 3, name: 'O' }] }),
      field(102, 'Nickname', 'text_box'),
      field(103, 'Region', 'radio', { integrated: true, options: [{ id: 4, name: 'East' }] }),
      field(104, 'Hobbies', 'checkbox', { options: [{ id: 5, name: 'Chess' }, { id: 6, name: 'Go' }] }),
    );
    addSheet(emu(), {
      id: 1, name: 'Skills', record_type: 1,
      fields: [
        field(201, 'Languages', 'checkbox', { options: [{ id: 11, name: 'Go' }, { id: 12, name: 'Rust' }, { id: 13, name: 'TS' }] }),
        field(202, 'Level', 'radio', { options: [{ id: 21, name: 'Low' }, { id: 22, name: 'High' }] }),
        field(203, 'Notes', 'text_area'),
      ],
    });
    addSheet(emu(), { id: 2, name: 'Health', record_type: 0, fields: [field(301, 'Status', 'pulldown', { options: [{ id: 31, name: 'Fit' }] })] });
    data().next_ids.enum_option = 100;
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('lists the pulldown, radio and checkbox fields of member fields and every sheet, without integrated fields', async () => {
    const res = await emu().api('GET', '/enum_options');
    expect(res.status).toBe(200);
    expect(res.body.custom_field_data.map((f: any) => f.id)).toEqual(['101', '104', '201', '202', '301']);
    expect(res.body.custom_field_data[0]).toEqual({
      sheet_name: '基本情報', id: '101', name: 'Blood type',
      enum_option_data: [{ id: 1, name: 'A' }, { id: 2, name: 'B' }, { id: 3, name: 'O' }],
    });
    expect(res.body.custom_field_data[2]).toMatchObject({ sheet_name: 'Skills', id: '201', name: 'Languages' });
    expect(res.body.custom_field_data[4]).toMatchObject({ sheet_name: 'Health', id: '301' });
  });

  it('gets one field, with 404 for an unknown id and 400 for a field without masters or under integration', async () => {
    const one = await emu().api('GET', '/enum_options/202');
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ sheet_name: 'Skills', id: '202', name: 'Level', enum_option_data: [{ id: 21, name: 'Low' }, { id: 22, name: 'High' }] });
    expect((await emu().api('GET', '/enum_options/999')).status).toBe(404);
    const text = await emu().api('GET', '/enum_options/102');
    expect(text.status).toBe(400);
    expect(text.body.errors[0]).toMatch(/text_box part; only pulldown, radio and checkbox parts have masters/);
    const integrated = await emu().api('GET', '/enum_options/103');
    expect(integrated.status).toBe(400);
    expect(integrated.body.errors[0]).toMatch(/data integration/);
  });

  it('refuses an update of an unknown field (404), a field without masters or under integration (400), and a bad body (400)', async () => {
    const body = { enum_option_data: [{ name: 'X' }] };
    expect((await emu().api('PUT', '/enum_options/999', body)).status).toBe(404);
    expect((await emu().api('PUT', '/enum_options/203', body)).status).toBe(400);
    expect((await emu().api('PUT', '/enum_options/103', body)).status).toBe(400);
    const empty = await emu().api('PUT', '/enum_options/101', { enum_option_data: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual(['enum_option_data must hold at least one element']);
    expect((await emu().api('PUT', '/enum_options/101', {})).status).toBe(400);
    expect((await emu().api('PUT', '/enum_options/101', { enum_option_data: [{ id: 1 }] })).status).toBe(400);
  });

  it('renames by id, adds without id (new ids), deletes the absent unused ones, in array order', async () => {
    const res = await task('PUT', '/enum_options/202', {
      enum_option_data: [{ name: 'Mid' }, { id: 22, name: 'Expert' }, { name: 'Guru' }],
    });
    expect(res).toMatchObject({ status: 'OK', messages: [] });
    const after = await emu().api('GET', '/enum_options/202');
    expect(after.body.enum_option_data).toEqual([{ id: 100, name: 'Mid' }, { id: 22, name: 'Expert' }, { id: 101, name: 'Guru' }]);
    expect(data().next_ids.enum_option).toBe(102);
  });

  it('ends NG naming the master and its member count when a used master would be deleted, and changes nothing', async () => {
    addMember(emu(), 'M101', { custom_fields: { '101': ['B'] } });
    addMember(emu(), 'M102', { custom_fields: { '101': ['B'] } });
    try {
      const res = await task('PUT', '/enum_options/101', { enum_option_data: [{ id: 1, name: 'A+' }, { id: 3, name: 'O' }] });
      expect(res.status).toBe('NG');
      expect(res.messages).toEqual([
        'master 2 ("B"): would be deleted (absent from enum_option_data) but has a member count of 2; only masters with a member count of 0 can be deleted',
      ]);
      expect(data().member_fields[0]!.options).toEqual([{ id: 1, name: 'A' }, { id: 2, name: 'B' }, { id: 3, name: 'O' }]);
    } finally {
      delete data().members.M101;
      delete data().members.M102;
    }
  });

  it('counts members, not records, for a sheet master in use', async () => {
    const sheet = data().sheets['1']!;
    sheet.records.M001 = [{ values: { '201': ['Go', 'Rust'] }, files: {} }, { values: { '201': ['Go'] }, files: {} }];
    sheet.records.M002 = [{ values: { '201': ['Go'] }, files: {} }];
    const res = await task('PUT', '/enum_options/201', { enum_option_data: [{ id: 12, name: 'Rust' }, { id: 13, name: 'TS' }] });
    expect(res.status).toBe('NG');
    expect(res.messages).toEqual([expect.stringMatching(/^master 11 \("Go"\): .* member count of 2;/)]);
  });

  it('ends NG for an id the field does not have, a repeated id, a repeated name and an empty name', async () => {
    const unknown = await task('PUT', '/enum_options/301', { enum_option_data: [{ id: 31, name: 'Fit' }, { id: 11, name: 'Go' }] });
    expect(unknown.status).toBe('NG');
    expect(unknown.messages).toEqual([expect.stringMatching(/^master 11: the field has no master with this id/)]);
    const repeatedId = await task('PUT', '/enum_options/301', { enum_option_data: [{ id: 31, name: 'Fit' }, { id: 31, name: 'Well' }] });
    expect(repeatedId.messages).toEqual(['master 31: appears more than once in enum_option_data']);
    const repeatedName = await task('PUT', '/enum_options/301', { enum_option_data: [{ id: 31, name: 'Fit' }, { name: 'Fit' }] });
    expect(repeatedName.messages).toEqual(['master name "Fit" appears more than once; names must be unique within a field']);
    const emptyName = await task('PUT', '/enum_options/301', { enum_option_data: [{ id: 31, name: ' ' }] });
    expect(emptyName.messages).toEqual(['master 31: name must not be empty']);
    expect(data().sheets['2']!.def.fields[0]!.options).toEqual([{ id: 31, name: 'Fit' }]);
  });

  it('renames the values stored in members and sends member_updated for the members whose value changed', async () => {
    addMember(emu(), 'M201', { custom_fields: { '104': ['Chess', 'Go'] }, updated_at: '2020-01-01 00:00:00' });
    addMember(emu(), 'M202', { custom_fields: { '104': ['Go'] }, updated_at: '2020-01-01 00:00:00' });
    addMember(emu(), 'M203', { custom_fields: { '104': ['Chess'] }, updated_at: '2020-01-01 00:00:00' });
    const events = vi.spyOn(company(), 'emitMemberEvent');
    const res = await task('PUT', '/enum_options/104', { enum_option_data: [{ id: 5, name: 'Chess' }, { id: 6, name: 'Igo' }] });
    expect(res.status).toBe('OK');
    expect(data().members.M201!.custom_fields['104']).toEqual(['Chess', 'Igo']);
    expect(data().members.M202!.custom_fields['104']).toEqual(['Igo']);
    expect(data().members.M203!.custom_fields['104']).toEqual(['Chess']);
    expect(data().members.M202!.updated_at).not.toBe('2020-01-01 00:00:00');
    expect(data().members.M203!.updated_at).toBe('2020-01-01 00:00:00');
    expect(events).toHaveBeenCalledTimes(1);
    expect(events).toHaveBeenCalledWith('member_updated', ['M201', 'M202']);
  });

  it('swaps two names without mixing up the stored values', async () => {
    addMember(emu(), 'M301', { custom_fields: { '101': ['A'] } });
    addMember(emu(), 'M302', { custom_fields: { '101': ['O'] } });
    const res = await task('PUT', '/enum_options/101', {
      enum_option_data: [{ id: 1, name: 'O' }, { id: 2, name: 'B' }, { id: 3, name: 'A' }],
    });
    expect(res.status).toBe('OK');
    expect(data().members.M301!.custom_fields['101']).toEqual(['O']);
    expect(data().members.M302!.custom_fields['101']).toEqual(['A']);
  });

  it('renames the values stored in sheet records without a member event: sheet data is not base information', async () => {
    const sheet = data().sheets['1']!;
    sheet.records.M003 = [{ values: { '201': ['Rust', 'TS'], '202': ['Expert'] }, files: {} }];
    sheet.updated_at = '2020-01-01 00:00:00';
    const events = vi.spyOn(company(), 'emitMemberEvent');
    const res = await task('PUT', '/enum_options/201', {
      enum_option_data: [{ id: 11, name: 'Golang' }, { id: 12, name: 'Rust' }, { id: 13, name: 'TypeScript' }],
    });
    expect(res.status).toBe('OK');
    expect(sheet.records.M001!.map((r) => r.values['201'])).toEqual([['Golang', 'Rust'], ['Golang']]);
    expect(sheet.records.M003![0]!.values).toEqual({ '201': ['Rust', 'TypeScript'], '202': ['Expert'] });
    expect(sheet.updated_at).not.toBe('2020-01-01 00:00:00');
    expect(events).not.toHaveBeenCalled();
  });

  it('with Dry-Run: 1 ends OK and changes nothing: no masters, values, ids or events', async () => {
    const before = structuredClone(data().member_fields[3]!.options);
    const nextId = data().next_ids.enum_option;
    const events = vi.spyOn(company(), 'emitMemberEvent');
    const res = await task('PUT', '/enum_options/104', { enum_option_data: [{ id: 5, name: 'Chess' }, { id: 6, name: 'Shogi' }, { name: 'Darts' }] }, { 'Dry-Run': '1' });
    expect(res.status).toBe('OK');
    expect(data().member_fields[3]!.options).toEqual(before);
    expect(data().members.M202!.custom_fields['104']).toEqual(['Igo']);
    expect(data().next_ids.enum_option).toBe(nextId);
    expect(events).not.toHaveBeenCalled();
    const invalid = await task('PUT', '/enum_options/104', { enum_option_data: [{ id: 99, name: 'X' }] }, { 'Dry-Run': '1' });
    expect(invalid.status).toBe('NG');
  });
});
