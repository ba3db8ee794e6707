/**
 * The reads of the legacy interface over HTTP (api-v1-legacy.md 2, 4 operations 2, 5, 8, 11-14;
 * wire-format.md, Legacy v1.x): users with masked passwords, departments as paths, sheets with
 * `YYYY/MM/DD` dates, the header-only dry-run, tasks, and each state of the asynchronous read.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { OPEN_LIMITS, v1Caller } from './legacy-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: OPEN_LIMITS });
const call = v1Caller(emu);

describe('operation 2: users', () => {
  it('lists every user with the password as ****, the role by name and the type Adm or 一般', async () => {
    const res = await call('/user');
    expect(res.status).toBe(200);
    const v2 = (await emu().api('GET', '/users')).body.user_data;
    expect(res.body.users).toHaveLength(v2.length);
    expect(Object.keys(res.body.headers)).toEqual(Object.keys(res.body.users[0]));
    const ikeda = res.body.users.find((u: any) => u.email === 'ai.ikeda@example.com');
    expect(ikeda).toMatchObject({
      password: '****', member_code: 'A0025', type: 'Adm', role: 'システム管理者 / Administrator',
      is_active: true, use_smartphone: true, last_logined_at: '2026-03-30 09:12:44',
    });
    const tanaka = res.body.users.find((u: any) => u.email === 'kenta.tanaka@example.com');
    expect(tanaka.type).toBe('一般');
    expect(tanaka.name).toBe((await emu().api('GET', '/members')).body.member_data.find((m: any) => m.code === 'A0005').name);
    for (const user of res.body.users) expect(user.password).toBe('****');
    expect(JSON.stringify(res.body)).not.toMatch(/sample-(Adm|hr|emp)-2026/);
  });

  it('answers the headers only in dry-run, from the query or the body', async () => {
    for (const res of [await call('/user?dryrun=1'), await call('/user', { dryrun: 1 }), await call('/user', { dryrun: '1' })]) {
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['headers']);
      expect(res.body.headers.password).toEqual(expect.any(String));
    }
    const production = await call('/user?dryrun=0');
    expect(production.body.users.length).toBeGreaterThan(0);
  });

  it('refuses a body with fields on a read, naming them', async () => {
    const res = await call('/user', { users: [], page: 2 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 'NG', errors: ['unknown fields "users", "page": this operation takes no parameters'] });
  });
});

describe('operation 5: departments', () => {
  it('lists each department as its path from the root, with leader, leader name and memo', async () => {
    const res = await call('/department');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('OK');
    const v2 = (await emu().api('GET', '/departments')).body.department_data;
    expect(res.body.departments).toHaveLength(v2.length);
    const tokyo = res.body.departments.find((d: any) => d.department_code3 === '1110');
    expect(tokyo).toEqual({
      department_code1: '1000', department_name1: '本社 / Head Office',
      department_code2: '1100', department_name2: '営業部 / Sales',
      department_code3: '1110', department_name3: '東京営業課 / Tokyo Sales',
      leader_member_code: 'A0004', leader_member_name: expect.any(String), memo: expect.anything(),
    });
    // Parents come before their children.
    const position = (code: string) => res.body.departments.findIndex((d: any) => Object.entries(d).some(([k, v]) => /^department_code\d$/.test(k) && v === code && !Object.keys(d).includes(`department_code${Number(k.slice(15)) + 1}`)));
    expect(position('1000')).toBeLessThan(position('1100'));
    expect(position('1100')).toBeLessThan(position('1110'));
  });

  it('answers status and headers only in dry-run', async () => {
    const res = await call('/department?dryrun=1');
    expect(Object.keys(res.body).sort()).toEqual(['headers', 'status']);
    expect(res.body.headers).toMatchObject({ department_code1: expect.any(String), department_name3: expect.any(String), memo: expect.any(String) });
  });
});

describe('operation 8: sheets', () => {
  it('reads sheet 0 as the base information: one record per v2 member, dates YYYY/MM/DD, departments by code and path', async () => {
    const res = await call('/sheet/0');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('OK');
    const members = (await emu().api('GET', '/members')).body.member_data;
    expect(res.body.data.map((r: any) => r.member_code)).toEqual(members.map((m: any) => m.code));
    const first = res.body.data[0];
    const v2 = members[0];
    expect(first).toMatchObject({
      member_code: v2.code, member_name: v2.name, member_kana: v2.name_kana, mail: v2.mail,
      entered_date: v2.entered_date.replaceAll('-', '/'), birthday: v2.birthday.replaceAll('-', '/'),
      department_code: v2.department.code, department_name: v2.department.name,
      definition_1101: v2.custom_fields.find((f: any) => f.id === 1101).values[0],
      last_modified_by: expect.any(String),
    });
    expect(first.last_modified_at).toMatch(/^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/);
    for (const record of res.body.data) {
      for (const key of ['entered_date', 'retired_date', 'birthday']) expect(record[key]).toMatch(/^(\d{4}\/\d{2}\/\d{2})?$/);
    }
  });

  it('reads another sheet with definition_<id> per v2 layout field, leaving file parts out', async () => {
    const res = await call('/sheet/1');
    const layout = (await emu().api('GET', '/sheet_layouts/1')).body;
    const v2 = (await emu().api('GET', '/sheets/1')).body;
    expect(res.body.data).toHaveLength(v2.member_data.length);
    const a1 = res.body.data.find((r: any) => r.member_code === 'A0001');
    expect(a1).toEqual({
      member_code: 'A0001', member_name: '山田 太郎', definition_1201: '1990/04/01', definition_1202: '無期 / Permanent',
      definition_1203: '420000', last_modified_by: 'API', last_modified_at: expect.stringMatching(/^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/),
    });
    const fileField = layout.custom_fields.find((f: any) => f.type_detail === 'attach_file');
    expect(a1).not.toHaveProperty(`definition_${fileField.id}`);
  });

  it('lists one record per record on a multiple-record sheet', async () => {
    const res = await call('/sheet/2');
    const v2 = (await emu().api('GET', '/sheets/2')).body;
    expect(v2.record_type).toBe(1);
    const count = v2.member_data.reduce((n: number, m: any) => n + m.records.length, 0);
    expect(res.body.data).toHaveLength(count);
  });

  it('answers status and headers only in dry-run; the headers label each field', async () => {
    const res = await call('/sheet/1', { dryrun: 1 });
    expect(res.body).toEqual({
      status: 'OK',
      headers: {
        member_code: expect.any(String), member_name: expect.any(String),
        definition_1201: '契約開始日 / Start date', definition_1202: '契約期間 / Term', definition_1203: '月給 / Monthly salary',
        last_modified_by: expect.any(String), last_modified_at: expect.any(String),
      },
    });
  });

  it('answers 404 in the NG shape for a sheet that does not exist', async () => {
    const res = await call('/sheet/999');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: 'NG', errors: [expect.stringMatching(/sheet 999 does not exist/)] });
  });
});

describe('operation 11: tasks', () => {
  it('answers 404 for a progress id no v1 update returned', async () => {
    const res = await call('/task/987654');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: 'NG', errors: ['no task has progress_id 987654'] });
  });

  it('goes WAITING → RUNNING → OK for an update, with an integer progress_id', async () => {
    await emu().control('POST', '/clock', { speed: 0.001 });
    try {
      const start = await call('/department/add', { departments: [{ department_code1: '9000', department_name1: 'Task test' }] });
      expect(start.body).toEqual({ progress_id: expect.any(Number), status: 'WAITING' });
      const id = start.body.progress_id;
      expect(Number.isInteger(id)).toBe(true);
      expect((await call(`/task/${id}`)).body).toEqual({ progress_id: id, status: 'WAITING' });
      await emu().control('POST', '/clock', { advance_seconds: 0.015 });
      expect((await call(`/task/${id}`)).body).toEqual({ progress_id: id, status: 'RUNNING' });
      await emu().control('POST', '/clock', { advance_seconds: 1 });
      expect((await call(`/task/${id}`)).body).toEqual({ progress_id: id, status: 'OK' });
    } finally {
      await emu().control('POST', '/clock', { speed: 1 });
    }
  });
});

describe('operations 12-14: the asynchronous read', () => {
  beforeAll(async () => {
    await emu().control('POST', '/clock', { speed: 0.001 });
    return async () => {
      await emu().control('POST', '/clock', { speed: 1 });
    };
  });

  it('goes WAITING → RUNNING → OK on the service clock, then answers the headers (with member_kana) and the records', async () => {
    const start = await call('/sheet/1/preset', {}, { version: 'v1.1' });
    expect(start.status).toBe(200);
    expect(start.body).toEqual({ data: { progress_id: expect.any(String), status: 'WAITING' } });
    const id = start.body.data.progress_id;

    const progress = () => call(`/sheet/1/task/${id}`, {}, { version: 'v1.1' });
    const result = () => call(`/sheet/1/get/${id}`, {}, { version: 'v1.1' });
    expect((await progress()).body).toEqual({ status: 'WAITING', message: expect.any(String) });
    expect((await result()).body).toEqual({ status: 'WAITING', message: expect.any(String) });
    await emu().control('POST', '/clock', { advance_seconds: 1.5 });
    expect((await progress()).body).toEqual({ status: 'RUNNING', message: expect.any(String) });
    expect((await result()).body).toEqual({ status: 'RUNNING', message: expect.any(String) });
    await emu().control('POST', '/clock', { advance_seconds: 2 });
    expect((await progress()).body).toEqual({ status: 'OK', message: expect.any(String) });

    const done = await result();
    expect(done.status).toBe(200);
    expect(done.body.status).toBe('OK');
    expect(done.body.data.headers).toMatchObject({ member_code: expect.any(String), member_name: expect.any(String), member_kana: expect.any(String), definition_1201: '契約開始日 / Start date' });
    const direct = (await call('/sheet/1')).body.data;
    expect(done.body.data.records).toHaveLength(direct.length);
    const members = (await emu().api('GET', '/members')).body.member_data;
    for (const [i, record] of done.body.data.records.entries()) {
      const { member_kana: kana, ...rest } = record;
      expect(rest).toEqual(direct[i]);
      expect(kana).toBe(members.find((m: any) => m.code === record.member_code).name_kana);
    }
    // The result can be fetched again, and in dry-run it is the headers only.
    expect((await result()).body.data.records).toHaveLength(direct.length);
    const headersOnly = await call(`/sheet/1/get/${id}?dryrun=1`);
    expect(headersOnly.body).toEqual({ status: 'OK', data: { headers: done.body.data.headers } });
  });

  it('reads sheet 0 asynchronously, one record per member', async () => {
    const id = (await call('/sheet/0/preset')).body.data.progress_id;
    await emu().control('POST', '/clock', { advance_seconds: 3 });
    const done = await call(`/sheet/0/get/${id}`);
    expect(done.body.data.records.map((r: any) => r.member_code)).toEqual((await call('/sheet/0')).body.data.map((r: any) => r.member_code));
  });

  it('answers NG with HTTP 200 for an unknown progress id, for another sheet id, and for an unknown sheet', async () => {
    const unknown = await call('/sheet/1/task/0123456789abcdef');
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ status: 'NG', message: expect.stringMatching(/does not exist/) });
    expect((await call('/sheet/1/get/0123456789abcdef')).body.status).toBe('NG');

    const id = (await call('/sheet/1/preset')).body.data.progress_id;
    await emu().control('POST', '/clock', { advance_seconds: 3 });
    for (const path of [`/sheet/2/task/${id}`, `/sheet/2/get/${id}`, `/sheet/0/get/${id}`]) {
      const other = await call(path);
      expect(other.status, path).toBe(200);
      expect(other.body, path).toEqual({ status: 'NG', message: expect.stringMatching(/issued for sheet 1/) });
    }
    expect((await call(`/sheet/1/get/${id}`)).body.status).toBe('OK');

    const noSheet = await call('/sheet/999/preset');
    expect(noSheet.status).toBe(200);
    expect(noSheet.body.data).toMatchObject({ progress_id: null, status: 'NG', message: expect.stringMatching(/sheet 999/) });
  });

  it('forgets a result 24 hours of service time after it was started', async () => {
    const id = (await call('/sheet/1/preset')).body.data.progress_id;
    await emu().control('POST', '/clock', { advance_seconds: 3 });
    expect((await call(`/sheet/1/get/${id}`)).body.status).toBe('OK');
    await emu().control('POST', '/clock', { advance_seconds: 24 * 3600 });
    expect((await call(`/sheet/1/get/${id}`)).body).toEqual({ status: 'NG', message: expect.stringMatching(/expired/) });
  });
});
