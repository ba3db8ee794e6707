/**
 * User and department updates through the legacy interface over HTTP (api-v1-legacy.md 4
 * operations 3, 4, 6, 7; wire-format.md, Legacy v1.x), checked through v2 reads: overwrite deletes
 * what is absent, add only adds, "-" keeps a flag, dry-run changes nothing, and bad bodies are 400
 * naming the field.
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

const v2Users = async () => (await v2('/users')).user_data as any[];
const v1Users = async () => (await call('/user')).body.users as any[];
/** The v1 read as an overwrite body: what is sent back unchanged. */
const asInput = (user: any) => {
  const { created_at: _c, last_logined_at: _l, password_modified_at: _p, last_modified_by: _b, last_modified_at: _m, ...rest } = user;
  return rest;
};

describe('operation 3: overwrite users', () => {
  it('keeps the users sent (password **** and flags "-" unchanged), changes what differs, adds new ones and deletes the absent', async () => {
    const before = await v1Users();
    const keep = before.filter((u) => u.email !== 'kenta.tanaka@example.com');
    const sasaki = keep.find((u) => u.email === 'keiko.sasaki@example.com');
    const changed = keep.map((u) => (u === sasaki ? { ...asInput(u), role: '一般社員 / Employee', is_active: false, use_smartphone: '-' } : asInput(u)));
    const task = await v1Update(call, '/user/overwrite', {
      users: [...changed, { email: 'new.user@example.com', password: 'first-pass-1', member_code: 'A0030', role: '一般社員 / Employee', is_active: '-' }],
    });
    expect(task).toEqual({ progress_id: expect.any(Number), status: 'OK' });

    const after = await v2Users();
    expect(after.map((u) => u.email).sort()).toEqual([...keep.map((u) => u.email), 'new.user@example.com'].sort());
    const v2Sasaki = after.find((u) => u.email === 'keiko.sasaki@example.com');
    expect(v2Sasaki).toMatchObject({ is_active: false, role: { name: '一般社員 / Employee' }, use_smartphone: sasaki.use_smartphone });
    expect(after.find((u) => u.email === 'new.user@example.com')).toMatchObject({ member_code: 'A0030', is_active: true });
    // The password sent as **** is the one the user had; the new one is stored, and reads as ****.
    const model = emu().emulator.companies[0]!.data.users;
    expect(model.find((u) => u.email === 'keiko.sasaki@example.com')!.password).toBe('sample-hr-2026');
    expect(model.find((u) => u.email === 'new.user@example.com')!.password).toBe('first-pass-1');
    expect((await v1Users()).find((u) => u.email === 'new.user@example.com')).toMatchObject({
      password: '****', name: expect.any(String), type: '一般',
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      last_modified_at: expect.stringMatching(/^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/),
    });
  });

  it('ends NG, changing nothing, when it would leave no active administrator', async () => {
    const before = await v2Users();
    const task = await v1Update(call, '/user/overwrite', { users: [{ email: 'keiko.sasaki@example.com' }] });
    expect(task.status).toBe('NG');
    expect(task.errors).toEqual([expect.stringMatching(/no active administrator/)]);
    expect(await v2Users()).toEqual(before);
  });

  it('ends NG naming the user for an unknown role, a missing password of a new user, and a member already linked', async () => {
    const users = (await v1Users()).map(asInput);
    const task = await v1Update(call, '/user/overwrite', {
      users: [
        ...users,
        { email: 'a@example.com', role: 'No such role', password: 'x' },
        { email: 'b@example.com', role: '一般社員 / Employee' },
        { email: 'c@example.com', role: '一般社員 / Employee', password: 'x', member_code: 'A0025' },
      ],
    });
    expect(task.status).toBe('NG');
    expect(task.errors).toEqual([
      expect.stringMatching(/^user a@example.com: no role is named "No such role"/),
      'user b@example.com: a new user needs a password',
      expect.stringMatching(/^user c@example.com: member_code "A0025" is already linked to user ai.ikeda@example.com/),
    ]);
  });

  it('answers 400 naming the field for an unknown field or a wrong type', async () => {
    const unknown = await call('/user/overwrite', { users: [{ email: 'x@example.com', nickname: 'X' }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ status: 'NG', errors: ['unknown field "nickname" in users[0]'] });
    const wrong = await call('/user/overwrite', { users: [{ email: 'x@example.com', is_active: 'yes' }] });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual(['users[0].is_active: must be true, false or "-"']);
    const notArray = await call('/user/overwrite', { users: { email: 'x@example.com' } });
    expect(notArray.body.errors).toEqual(['users: must be an array of users']);
  });
});

describe('operation 4: add users', () => {
  it('adds a user visible through v2, with the created_at it was given', async () => {
    const task = await v1Update(call, '/user/add', {
      users: [{ email: 'added@example.com', password: 'pw-added-1', member_code: 'A0029', role: '人事担当 / HR staff', use_smartphone: true, created_at: '2020/01/02 03:04:05' }],
    });
    expect(task.status).toBe('OK');
    expect((await v2Users()).find((u) => u.email === 'added@example.com')).toMatchObject({ member_code: 'A0029', use_smartphone: true, role: { name: '人事担当 / HR staff' } });
    expect((await v1Users()).find((u) => u.email === 'added@example.com').created_at).toBe('2020-01-02 03:04:05');
  });

  it('refuses an email that exists (NG naming it) and changes nothing', async () => {
    const before = await v2Users();
    const task = await v1Update(call, '/user/add', { users: [{ email: 'AI.IKEDA@example.com', password: 'x', role: '一般社員 / Employee' }] });
    expect(task.status).toBe('NG');
    expect(task.errors).toEqual([expect.stringMatching(/^user AI.IKEDA@example.com: a user with this email already exists/)]);
    expect(await v2Users()).toEqual(before);
  });

  it('in dry-run answers status and errors without a progress_id and changes nothing', async () => {
    const before = await v2Users();
    const ok = await call('/user/add?dryrun=1', { users: [{ email: 'dry@example.com', password: 'x', role: '一般社員 / Employee' }] });
    expect(ok.body).toEqual({ status: 'OK', errors: [] });
    const ng = await call('/user/add', { dryrun: 1, users: [{ email: 'dry@example.com', role: '一般社員 / Employee' }] });
    expect(ng.body).toEqual({ status: 'NG', errors: ['user dry@example.com: a new user needs a password'] });
    expect(await v2Users()).toEqual(before);
  });
});

describe('operations 6 and 7: departments', () => {
  const v2Departments = async () => (await v2('/departments')).department_data as any[];

  it('add creates a department under an existing path, visible through v2 with its parent, leader and memo', async () => {
    const task = await v1Update(call, '/department/add', {
      departments: [{
        department_code1: '1000', department_name1: '本社 / Head Office',
        department_code2: '1100', department_name2: '営業部 / Sales',
        department_code3: '1190', department_name3: 'New Sales', department_code4: '', department_name4: '',
        leader_member_code: 'A0003', leader_member_name: 'ignored', memo: 'added through v1',
      }],
    });
    expect(task.status).toBe('OK');
    const after = await v2Departments();
    const added = after.find((d) => d.code === '1190');
    expect(added).toMatchObject({ name: 'New Sales', parent_code: '1100', leader_member_code: 'A0003', memo: 'added through v1' });
    // It goes after its siblings, whose order is kept.
    const siblings = after.filter((d) => d.parent_code === '1100' && d.code !== '1190');
    expect(siblings.length).toBeGreaterThan(0);
    for (const sibling of siblings) expect(added.order).toBeGreaterThan(sibling.order);
  });

  it('add refuses a department that exists and one that would rename an existing one', async () => {
    const task = await v1Update(call, '/department/add', {
      departments: [
        { department_code1: '1000', department_name1: '本社 / Head Office' },
        { department_code1: '1000', department_name1: 'Renamed', department_code2: '1199', department_name2: 'X' },
      ],
    });
    expect(task.status).toBe('NG');
    expect(task.errors).toEqual(expect.arrayContaining([
      expect.stringMatching(/^department 1000: already exists/),
      expect.stringMatching(/^department 1000: named both/),
    ]));
  });

  it('overwrite with the read sent back changes nothing; leaving out an empty department deletes it', async () => {
    const before = await v2Departments();
    const read = (await call('/department')).body.departments;
    expect((await v1Update(call, '/department/overwrite', { departments: read })).status).toBe('OK');
    expect(await v2Departments()).toEqual(before);

    await v1Update(call, '/department/add', { departments: [{ department_code1: '9100', department_name1: 'Empty' }] });
    expect((await v2Departments()).some((d) => d.code === '9100')).toBe(true);
    expect((await v1Update(call, '/department/overwrite', { departments: read })).status).toBe('OK');
    expect((await v2Departments()).some((d) => d.code === '9100')).toBe(false);
  });

  it('overwrite ends NG, changing nothing, when it would delete a department members belong to', async () => {
    const before = await v2Departments();
    const read = (await call('/department')).body.departments.filter((d: any) => !Object.values(d).includes('1110'));
    const task = await v1Update(call, '/department/overwrite', { departments: read });
    expect(task.status).toBe('NG');
    expect(task.errors!.join('\n')).toMatch(/department 1110: cannot be deleted while members belong to it/);
    expect(await v2Departments()).toEqual(before);
  });

  it('answers 400 naming an unknown key or a level without its name', async () => {
    const unknown = await call('/department/add', { departments: [{ department_code1: '1', department_name1: 'A', parent: 'x' }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual(['unknown field "parent" in departments[0]']);
    const gap = await call('/department/add', { departments: [{ department_code1: '1', department_code2: '2', department_name2: 'B' }] });
    expect(gap.status).toBe(400);
    expect(gap.body.errors[0]).toMatch(/departments\[0\]: department_code1 and department_name1 are both required/);
  });

  it('in dry-run answers the verdict and changes nothing', async () => {
    const before = await v2Departments();
    const res = await call('/department/overwrite?dryrun=1', { departments: [{ department_code1: '1', department_name1: 'Only' }] });
    expect(res.body.status).toBe('NG');
    expect(res.body.errors.length).toBeGreaterThan(0);
    expect(res.body).not.toHaveProperty('progress_id');
    expect(await v2Departments()).toEqual(before);
  });
});
