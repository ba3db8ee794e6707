/**
 * The SDK's users, roles, extended access settings, masters and webhook settings against the
 * in-process emulator (issue 3: every method with a real round trip).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember, addSheet, companyOf, field } from '../helpers/fixtures.js';
import { NotFoundError, type TaskRef, type WdsClient } from '../../src/index.js';
import type { User } from '../../src/emulator/model.js';

// The service clock all but stands still, so the times the tests expect do not tick on under load;
// tasks then take no service time at all (at this speed 5 service ms would be 5 real seconds).
const emu = useEmulator({ clockSpeed: 0.001, limits: { updatesPerMinute: 10_000, requestsPerHour: 1_000_000 }, taskTiming: { waitMs: 0, runMs: 0, perItemMs: 0 } });
let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), { limits: { update: { limit: 10_000, windowMs: 60_000 }, request: { limit: 1_000_000, windowMs: 3_600_000 } } });
});
afterAll(async () => {
  await client.close();
});

function user(id: number, memberCode: string | null, roleId = 2): User {
  return {
    id, email: `user${id}@example.test`, member_code: memberCode, password: 'pw', role_id: roleId, is_active: true,
    password_locked: false, use_smartphone: false, use_native_app: false, use_secure: false, last_login_at: null,
  };
}

beforeEach(async () => {
  const company = companyOf(emu());
  await company.reset();
  company.data.roles = [{ id: 1, name: 'Administrator', type: 'Adm' }, { id: 2, name: 'Staff', type: 'General' }];
  company.data.departments = [{ code: 'HQ', name: 'Head office', parent_code: null, leader_member_code: null, order: 1, memo: '' }];
  for (const code of ['M001', 'M002', 'M003']) addMember(emu(), code);
  company.data.users = [user(1, 'M001', 1), user(2, 'M002')];
  company.data.next_ids.user = 3;
});

const done = async (ref: Promise<TaskRef>) => client.tasks.wait((await ref).taskId, { intervalMs: 5, throwOnFailure: true });

describe('client.users', () => {
  it('list answers every user, never the password', async () => {
    const users = await client.users.list();
    expect(users.map((u) => [u.id, u.email, u.member_code])).toEqual([[1, 'user1@example.test', 'M001'], [2, 'user2@example.test', 'M002']]);
    expect(users[0]!.role).toEqual({ id: 1, name: 'Administrator', type: 'Adm' });
    expect(JSON.stringify(users)).not.toContain('password"');
  });

  it('get answers one user with last_login_at', async () => {
    companyOf(emu()).data.users[1]!.last_login_at = '2026-03-31 18:00:00';
    expect(await client.users.get(2)).toMatchObject({ id: 2, member_code: 'M002', last_login_at: '2026-03-31 18:00:00', role: { id: 2 } });
  });

  it('register answers the new user with the defaults; it is then listed', async () => {
    const created = await client.users.register({ email: 'new@example.test', member_code: 'M003', password: 'S3cret!pass', role: { id: 2 } });
    expect(created).toMatchObject({ id: 3, email: 'new@example.test', member_code: 'M003', is_active: true, password_locked: false, use_smartphone: false, use_native_app: false });
    expect((await client.users.list()).map((u) => u.id)).toEqual([1, 2, 3]);
  });

  it('update changes only the fields sent', async () => {
    const updated = await client.users.update(2, { is_active: false, role: { id: 1 } });
    expect(updated).toMatchObject({ id: 2, email: 'user2@example.test', is_active: false, role: { id: 1, type: 'Adm' } });
    expect(await client.users.get(2)).toMatchObject({ is_active: false, role: { id: 1 } });
  });

  it('delete removes the user', async () => {
    await expect(client.users.delete(2)).resolves.toBeUndefined();
    expect((await client.users.list()).map((u) => u.id)).toEqual([1]);
    await expect(client.users.get(2)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('client.roles', () => {
  it('list answers every role', async () => {
    expect(await client.roles.list()).toEqual([{ id: 1, name: 'Administrator', type: 'Adm' }, { id: 2, name: 'Staff', type: '一般' }]);
  });
});

describe('client.advancedPermissions', () => {
  it('list(type) answers the settings of that kind', async () => {
    companyOf(emu()).data.advanced_permissions.member = [{ user_id: 2, add_codes: ['M003'], exclusion_codes: [] }];
    expect(await client.advancedPermissions.list('member')).toEqual([{ user_id: 2, add_codes: ['M003'], exclusion_codes: [] }]);
    expect(await client.advancedPermissions.list('department')).toEqual([]);
  });

  it('replace(type, data) swaps every setting of the kind', async () => {
    companyOf(emu()).data.advanced_permissions.member = [{ user_id: 1, add_codes: ['M002'], exclusion_codes: [] }];
    await done(client.advancedPermissions.replace('member', [{ user_id: 2, add_codes: ['M001'], exclusion_codes: ['M003'] }]));
    expect(await client.advancedPermissions.list('member')).toEqual([{ user_id: 2, add_codes: ['M001'], exclusion_codes: ['M003'] }]);
    await done(client.advancedPermissions.replace('department', [{ user_id: 1, add_codes: ['HQ'], exclusion_codes: [] }]));
    expect(await client.advancedPermissions.list('department')).toEqual([{ user_id: 1, add_codes: ['HQ'], exclusion_codes: [] }]);
  });
});

describe('client.enumOptions', () => {
  beforeEach(() => {
    addSheet(emu(), { id: 7, name: 'Profile', record_type: 0, fields: [field(701, 'Size', 'pulldown', { options: [{ id: 1, name: 'S' }, { id: 2, name: 'M' }] }), field(702, 'Text', 'text_box')] });
    companyOf(emu()).data.next_ids.enum_option = 3;
  });

  it('list answers the fields that have masters', async () => {
    expect(await client.enumOptions.list()).toEqual([{ sheet_name: 'Profile', id: '701', name: 'Size', enum_option_data: [{ id: 1, name: 'S' }, { id: 2, name: 'M' }] }]);
  });

  it('get answers one field', async () => {
    expect(await client.enumOptions.get(701)).toMatchObject({ id: '701', enum_option_data: [{ id: 1, name: 'S' }, { id: 2, name: 'M' }] });
  });

  it('update renames, adds (no id), deletes (absent) and orders as given', async () => {
    await done(client.enumOptions.update(701, [{ name: 'L' }, { id: 2, name: 'Medium' }]));
    expect((await client.enumOptions.get(701)).enum_option_data).toEqual([{ id: 3, name: 'L' }, { id: 2, name: 'Medium' }]);
  });
});

describe('client.webhooks', () => {
  const hook = { url: 'https://hooks.example.test/wds', events: ['member_created', 'member_deleted'] as ('member_created' | 'member_deleted')[], secret_token: 'hook-token-1' };

  it('register answers the setting; list answers it', async () => {
    const created = await client.webhooks.register(hook);
    expect(created).toMatchObject({ id: 1, url: hook.url, events: hook.events, secret_token: 'hook-token-1', created_at: '2026-04-01 10:00:00' });
    expect(await client.webhooks.list()).toEqual([created]);
  });

  it('update replaces url and events; a secret left out is kept', async () => {
    const { id } = await client.webhooks.register(hook);
    const updated = await client.webhooks.update(id, { url: 'https://hooks.example.test/v2', events: ['member_updated'] });
    expect(updated).toMatchObject({ id, url: 'https://hooks.example.test/v2', events: ['member_updated'], secret_token: 'hook-token-1' });
    expect((await client.webhooks.list())[0]).toMatchObject({ url: 'https://hooks.example.test/v2' });
  });

  it('delete removes the setting', async () => {
    const { id } = await client.webhooks.register(hook);
    await expect(client.webhooks.delete(id)).resolves.toBeUndefined();
    expect(await client.webhooks.list()).toEqual([]);
  });
});
