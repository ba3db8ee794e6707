/**
 * Every method of LegacyClient against the in-process emulator's legacy interface: the reads, the
 * updates and their tasks (OK and NG with its errors), dry-run, the asynchronous read with its
 * states, the raw `request`, and the version each operation needs. The limits are wide open here
 * (legacy-limits.test covers them).
 */
import { describe, expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import {
  LegacyClient, LegacyAsyncReadError, NotFoundError, OptionsError, BadRequestError, type LegacyClientOptions, type LegacyWaitEvent,
} from '../../src/index.js';
import { legacyClientFor } from '../helpers/legacy-client.js';

const emu = useEmulator({ seed: 'samples/company', maintenance: false, limits: { legacyRequestsPerHour: 100_000, legacyTokensPerHour: 1000 } });

function legacy(e: TestEmulator, options: Partial<LegacyClientOptions> = {}): LegacyClient {
  return legacyClientFor(e.url, options);
}

/** The members v2 lists, by code. */
async function v2Members(e: TestEmulator): Promise<Map<string, { name: string }>> {
  const { body } = await e.api('GET', '/members?per_page=1000');
  const list = body.member_data as { code: string; name: string }[];
  return new Map(list.map((m) => [m.code, m]));
}

describe('LegacyClient reads', () => {
  it('lists users with masked passwords and field labels', async () => {
    const client = legacy(emu());
    const { headers, users } = await client.users.list();
    expect(users.length).toBeGreaterThan(0);
    expect(headers.email).toBeTruthy();
    for (const user of users) expect(user.password).toBe('****');
    expect(users.some((u) => u.type === 'Adm')).toBe(true);
    await client.close();
  });

  it('lists departments as paths of codes and names', async () => {
    const client = legacy(emu());
    const { status, departments } = await client.departments.list();
    expect(status).toBe('OK');
    expect(departments.length).toBeGreaterThan(0);
    for (const d of departments) expect(typeof d.department_code1).toBe('string');
    expect(departments.some((d) => typeof d.department_code2 === 'string')).toBe(true);
    await client.close();
  });

  it('reads sheet 0 as one row per member of v2, dates as YYYY/MM/DD', async () => {
    const client = legacy(emu());
    const { status, data } = await client.sheets.get(0);
    expect(status).toBe('OK');
    const members = await v2Members(emu());
    expect(data.map((r) => r.member_code).sort()).toEqual([...members.keys()].sort());
    const first = data.find((r) => r.member_code === 'A0001')!;
    expect(first.member_name).toBe(members.get('A0001')!.name);
    expect(first.birthday).toBe('1965/04/12');
    expect(first.last_modified_at).toMatch(/^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/);
    await client.close();
  });

  it('reads another sheet with its fields as definition_<id>', async () => {
    const client = legacy(emu());
    const { data } = await client.sheets.get(1);
    expect(data.length).toBeGreaterThan(0);
    expect(Object.keys(data[0]!).some((k) => /^definition_\d+$/.test(k))).toBe(true);
    await client.close();
  });

  it('throws NotFoundError for a sheet that does not exist, and refuses a sheet id that is not one before sending', async () => {
    const client = legacy(emu());
    await expect(client.sheets.get(999_999)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.sheets.get(-1)).rejects.toThrow(/sheet id is a whole number/);
    await expect(client.sheets.get(1.5)).rejects.toBeInstanceOf(OptionsError);
    await client.close();
  });
});

describe('LegacyClient updates and tasks', () => {
  it('changes a member through sheet 0 (update, then tasks.wait), seen by v2', async () => {
    const client = legacy(emu());
    const queued = await client.sheets.update(0, [{ member_code: 'A0002', member_name: '改名 花子' }]);
    expect(queued.dryRun).toBe(false);
    if (queued.dryRun) return;
    expect(queued.status).toBe('WAITING');
    const polls: string[] = [];
    const task = await client.tasks.wait(queued.progressId, { onPoll: (t) => polls.push(t.status) });
    expect(task).toEqual({ progressId: queued.progressId, status: 'OK', errors: [] });
    expect(polls.at(-1)).toBe('OK');
    expect((await v2Members(emu())).get('A0002')!.name).toBe('改名 花子');
    expect((await client.tasks.get(queued.progressId)).status).toBe('OK');
    await client.close();
  });

  it('answers NG with the errors of a task the service refused', async () => {
    const client = legacy(emu());
    const queued = await client.sheets.update(0, [{ member_code: 'NOSUCH', member_name: 'x' }]);
    if (queued.dryRun) throw new Error('not a dry run');
    const task = await client.tasks.wait(queued.progressId);
    expect(task.status).toBe('NG');
    expect(task.errors.join(' ')).toMatch(/NOSUCH/);
    await client.close();
  });

  it('dry-run checks and changes nothing, per call or for the whole client', async () => {
    const before = await v2Members(emu());
    const client = legacy(emu());
    const ok = await client.sheets.update(0, [{ member_code: 'A0003', member_name: '試し' }], { dryRun: true });
    expect(ok).toEqual({ dryRun: true, status: 'OK', errors: [] });
    const dry = legacy(emu(), { dryRun: true });
    const ng = await dry.sheets.add(1, [{ member_code: 'NOSUCH' }]);
    expect(ng.dryRun).toBe(true);
    expect(ng.status).toBe('NG');
    if (ng.dryRun) expect(ng.errors.join(' ')).toMatch(/NOSUCH/);
    // The client's dry-run leaves reads as they are.
    expect((await dry.sheets.get(0)).data.length).toBe(before.size);
    expect((await v2Members(emu())).get('A0003')!.name).toBe(before.get('A0003')!.name);
    await Promise.all([client.close(), dry.close()]);
  });

  it('adds, overwrites and deletes sheet data', async () => {
    const client = legacy(emu());
    const { data } = await client.sheets.get(1);
    const row = data.find((r) => Object.keys(r).some((k) => k.startsWith('definition_')))!;
    const textField = Object.keys(row).find((k) => k.startsWith('definition_'))!;
    const done = async (p: Promise<import('../../src/index.js').LegacyUpdate>): Promise<string> => {
      const u = await p;
      if (u.dryRun) throw new Error('not a dry run');
      const t = await client.tasks.wait(u.progressId);
      return `${t.status} ${t.errors.join('; ')}`.trim();
    };
    // Overwrite with the sheet as it is keeps it as it is.
    const same = data.map(({ last_modified_at: _a, last_modified_by: _b, member_kana: _k, ...rest }) => rest) as typeof data;
    expect(await done(client.sheets.overwrite(1, same))).toBe('OK');
    expect((await client.sheets.get(1)).data.length).toBe(data.length);
    expect(await done(client.sheets.delete(1, [row.member_code]))).toBe('OK');
    const afterDelete = (await client.sheets.get(1)).data.find((r) => r.member_code === row.member_code);
    expect(afterDelete?.[textField] ?? '').not.toBe(row[textField] || 'never');
    // The member itself stays: only its row of sheet 1 went.
    expect((await v2Members(emu())).has(row.member_code)).toBe(true);
    const again = Object.fromEntries(Object.entries(same.find((r) => r.member_code === row.member_code)!));
    expect(await done(client.sheets.add(1, [again as (typeof data)[number]]))).toBe('OK');
    const restored = (await client.sheets.get(1)).data.find((r) => r.member_code === row.member_code)!;
    expect(restored[textField]).toEqual(row[textField]);
    await client.close();
  });

  it('adds and overwrites users and departments', async () => {
    const client = legacy(emu());
    const done = async (p: Promise<import('../../src/index.js').LegacyUpdate>): Promise<string> => {
      const u = await p;
      if (u.dryRun) throw new Error('not a dry run');
      const t = await client.tasks.wait(u.progressId);
      return `${t.status} ${t.errors.join('; ')}`.trim();
    };
    const email = 'legacy.client@example.com';
    const role = (await client.users.list()).users.find((u) => u.type !== 'Adm')!.role!;
    expect(await done(client.users.add([{ email, name: 'Legacy Client', password: 'Pa55word-legacy', role, is_active: true }]))).toBe('OK');
    const { users } = await client.users.list();
    expect(users.find((u) => u.email === email)?.role).toBe(role);
    // Overwrite with the list as read (passwords left out) keeps every account but the one not listed.
    const keep = users.filter((u) => u.email !== email).map(({ email: e, name, member_code, type, role, is_active }) => ({
      email: e as string, name: name as string, ...(member_code ? { member_code } : {}), ...(type ? { type } : {}), ...(role ? { role } : {}),
      ...(typeof is_active === 'boolean' ? { is_active } : {}),
    }));
    expect(await done(client.users.overwrite(keep))).toBe('OK');
    expect((await client.users.list()).users.map((u) => u.email).sort()).toEqual(keep.map((u) => u.email).sort());

    const { departments } = await client.departments.list();
    const top = departments.find((d) => !d.department_code2)!;
    const added = { department_code1: top.department_code1, department_name1: top.department_name1, department_code2: 'LC01', department_name2: 'Legacy client team' };
    expect(await done(client.departments.add([added]))).toBe('OK');
    const withNew = (await client.departments.list()).departments;
    expect(withNew.some((d) => d.department_code2 === 'LC01')).toBe(true);
    expect(await done(client.departments.overwrite(departments))).toBe('OK');
    expect((await client.departments.list()).departments.some((d) => d.department_code2 === 'LC01')).toBe(false);
    await client.close();
  });
});

describe('LegacyClient asynchronous read', () => {
  it('reads sheet 0 through 12 -> 13 -> 14: the same rows as operation 8, with headers', async () => {
    const client = legacy(emu());
    const polls: string[] = [];
    const waits: LegacyWaitEvent[] = [];
    const paced = legacy(emu(), { onWait: (e) => waits.push(e) });
    const { headers, records } = await paced.sheets.readAsync(0, { onPoll: (status) => polls.push(status) });
    const direct = await client.sheets.get(0);
    expect(records.map((r) => r.member_code)).toEqual(direct.data.map((r) => r.member_code));
    expect(headers.member_code).toBeTruthy();
    expect(headers.member_kana).toBeTruthy();
    expect(polls.at(-1)).toBe('OK');
    expect(waits.filter((w) => w.reason === 'poll').length).toBe(polls.length);
    for (const w of waits) expect(w.ms).toBe(w.waitMs);
    await Promise.all([client.close(), paced.close()]);
  });

  it('shows WAITING or RUNNING before the result is ready, and NG for another sheet or an unknown id', async () => {
    const client = legacy(emu());
    const { progressId } = await client.sheets.preset(1);
    const early = await client.sheets.result(1, progressId);
    expect(['WAITING', 'RUNNING']).toContain(early.status);
    const progress = await client.sheets.progress(1, progressId);
    expect(['WAITING', 'RUNNING', 'OK']).toContain(progress.status);
    expect(progress.message).not.toBe('');
    const other = await client.sheets.result(2, progressId);
    expect(other.status).toBe('NG');
    expect((await client.sheets.progress(1, 'ffffffffffffffff')).status).toBe('NG');
    await expect(client.sheets.preset(999_999)).rejects.toBeInstanceOf(LegacyAsyncReadError);
    await client.close();
  });
});

describe('LegacyClient.request and versions', () => {
  it('sends a raw call and answers its status and body; dry-run on a read answers the header part', async () => {
    const client = legacy(emu());
    const answer = await client.request('/department');
    expect(answer.status).toBe(200);
    expect((answer.body as { departments: unknown[] }).departments.length).toBeGreaterThan(0);
    const header = await client.request('user', undefined, { dryRun: true });
    expect(header.body).toHaveProperty('headers');
    expect(header.body).not.toHaveProperty('users');
    await expect(client.request('/user/add', { users: [{ email: 'x@example.com', bogus: 1 }] }, { dryRun: true })).rejects.toBeInstanceOf(BadRequestError);
    await expect(client.request('/get_token', {})).rejects.toBeInstanceOf(OptionsError);
    await client.close();
  });

  it('refuses, before sending, an operation the chosen version lacks; v1.0 still reads', async () => {
    const v10 = legacy(emu(), { version: 'v1.0' });
    const v11 = legacy(emu(), { version: 'v1.1' });
    const before = (await emu().control('GET', '/stats')).requests ?? {};
    await expect(v10.sheets.preset(0)).rejects.toThrow(/needs legacy version v1.1/);
    await expect(v11.sheets.update(0, [])).rejects.toThrow(/needs legacy version v1.2/);
    await expect(v11.sheets.delete(0, ['A0001'])).rejects.toThrow(/v1.2/);
    const after = (await emu().control('GET', '/stats')).requests ?? {};
    expect(JSON.stringify(after)).toBe(JSON.stringify(before));
    expect((await v10.sheets.get(0)).data.length).toBeGreaterThan(0);
    expect((await v11.sheets.readAsync(2)).headers).toBeTruthy();
    await Promise.all([v10.close(), v11.close()]);
  });

  it('checks its options at the edge, without showing the secret', () => {
    expect(() => legacy(emu(), { version: 'v2.0' as 'v1.2' })).toThrow(/version must be v1.0, v1.1 or v1.2/);
    expect(() => legacy(emu(), { consumerSecret: '' })).toThrow(/consumerSecret must not be empty/);
    expect(() => legacy(emu(), { baseUrl: 'ftp://x' })).toThrow(/baseUrl/);
  });
});
