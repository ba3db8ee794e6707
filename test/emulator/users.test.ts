import { beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addMember, companyOf } from '../helpers/fixtures.js';
import type { User } from '../../src/emulator/model.js';

const emu = useEmulator();

const data = () => companyOf(emu()).data;

/** A register body for the member `code`, valid unless `extra` says otherwise. */
function registration(code: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { email: `${code.toLowerCase()}@example.test`, member_code: code, password: 'secret-1', role: { id: 2 }, ...extra };
}

/** A user placed directly in the data, for reads and updates. */
function arrangeUser(extra: Partial<User> & { id: number }): User {
  const user: User = {
    email: `user${extra.id}@example.test`, member_code: null, password: 'pw', role_id: 2, is_active: true,
    password_locked: false, use_smartphone: false, use_native_app: false, use_secure: false, last_login_at: null, ...extra,
  };
  data().users.push(user);
  data().next_ids.user = Math.max(data().next_ids.user, user.id + 1);
  return user;
}

beforeAll(() => {
  data().roles.push({ id: 1, name: 'Administrator', type: 'Adm' }, { id: 2, name: 'Staff', type: 'General' });
  for (let i = 1; i <= 40; i += 1) addMember(emu(), `U${String(i).padStart(3, '0')}`);
});

describe('GET /users and /users/{id} (api-v2.md 2 User)', () => {
  it('lists every user under user_data, with null member_code and last_login_at when absent and never a password', async () => {
    arrangeUser({ id: 500, member_code: null, last_login_at: null });
    arrangeUser({ id: 501, member_code: 'U040', last_login_at: '2026-03-01 09:00:00' });
    const res = await emu().api('GET', '/users');
    expect(res.status).toBe(200);
    const unlinked = res.body.user_data.find((u: any) => u.id === 500);
    expect(unlinked).toEqual({
      id: 500, email: 'user500@example.test', member_code: null, role: { id: 2, name: 'Staff', type: '一般' },
      is_active: true, password_locked: false, use_smartphone: false, use_native_app: false, last_login_at: null,
    });
    for (const user of res.body.user_data) {
      expect(user).not.toHaveProperty('password');
      expect(user).not.toHaveProperty('use_secure');
    }
  });

  it('gets one user with last_login_at', async () => {
    const res = await emu().api('GET', '/users/501');
    expect(res.status).toBe(200);
    expect(res.body.member_code).toBe('U040');
    expect(res.body.last_login_at).toBe('2026-03-01 09:00:00');
    expect(res.body).not.toHaveProperty('password');
  });

  it('answers 404 for an unknown user id', async () => {
    const res = await emu().api('GET', '/users/9999');
    expect(res.status).toBe(404);
    expect(res.body.errors[0]).toMatch(/user 9999/);
  });
});

describe('POST /users (api-v2.md 4.4 Users 1, 2)', () => {
  it('registers a user and answers it with the defaults: active, unlocked, smartphone and app stopped', async () => {
    const res = await emu().api('POST', '/users', registration('U001'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      email: 'u001@example.test', member_code: 'U001', role: { id: 2, name: 'Staff', type: '一般' },
      is_active: true, password_locked: false, use_smartphone: false, use_native_app: false, last_login_at: null,
    });
    expect(res.body).not.toHaveProperty('password');
    const stored = data().users.find((u) => u.id === res.body.id)!;
    expect(stored.password).toBe('secret-1');
    expect((await emu().api('GET', `/users/${res.body.id}`)).body.email).toBe('u001@example.test');
  });

  it('keeps the booleans that are sent', async () => {
    const res = await emu().api('POST', '/users', registration('U002', {
      is_active: false, password_locked: true, use_smartphone: true, use_native_app: true, role: { id: 1 },
    }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ is_active: false, password_locked: true, use_smartphone: true, use_native_app: true, role: { type: 'Adm' } });
  });

  it('turns the smartphone app on by default when the administrator setting says so, unless the body says otherwise', async () => {
    data().auto_enable_native_app = true;
    try {
      const auto = await emu().api('POST', '/users', registration('U003'));
      expect(auto.body.use_native_app).toBe(true);
      const off = await emu().api('POST', '/users', registration('U004', { use_native_app: false }));
      expect(off.body.use_native_app).toBe(false);
    } finally {
      data().auto_enable_native_app = false;
    }
  });

  it('stops secure access on register even when the body asks for it', async () => {
    const res = await emu().api('POST', '/users', registration('U005', { use_secure: true }));
    expect(res.status).toBe(200);
    expect(data().users.find((u) => u.id === res.body.id)!.use_secure).toBe(false);
  });

  it('answers 400 naming every missing required field', async () => {
    const res = await emu().api('POST', '/users', {});
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(['email is required', 'member_code is required', 'password is required', 'role is required']);
    const one = await emu().api('POST', '/users', registration('U006', { password: undefined }));
    expect(one.status).toBe(400);
    expect(one.body.errors).toEqual(['password is required']);
  });

  it('answers 400 for a body that is not a JSON object, and for fields of the wrong type', async () => {
    expect((await emu().api('POST', '/users')).status).toBe(400);
    expect((await emu().api('POST', '/users', [registration('U006')])).status).toBe(400);
    const res = await emu().api('POST', '/users', registration('U006', { role: 2, is_active: 'yes', password: '' }));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(expect.arrayContaining([
      expect.stringMatching(/^role must be an object/), 'is_active must be true or false', expect.stringMatching(/^password/),
    ]));
  });

  it('refuses a role that does not exist', async () => {
    const res = await emu().api('POST', '/users', registration('U006', { role: { id: 77 } }));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(['role: no role has id 77']);
  });

  it('refuses a member_code that names no member', async () => {
    const res = await emu().api('POST', '/users', registration('U006', { member_code: 'NOPE' }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/member_code "NOPE": no member/);
  });

  it('refuses a member already linked to another user', async () => {
    const res = await emu().api('POST', '/users', registration('U006', { member_code: 'U001' }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/member_code "U001" is already linked to user \d+/);
  });

  it('refuses an email that another user has, in any letter case', async () => {
    const res = await emu().api('POST', '/users', registration('U006', { email: 'U001@Example.TEST' }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/email "U001@Example.TEST" is already used by user \d+/);
  });

  it('refuses an email that is not shaped like a mail address', async () => {
    for (const email of ['no-at-sign', 'two@@example.test', 'a b@example.test', 'user@nodot', '']) {
      const res = await emu().api('POST', '/users', registration('U006', { email }));
      expect(res.status, email).toBe(400);
      expect(res.body.errors[0]).toMatch(/is not a mail address/);
    }
  });

  it('names every problem of one request together', async () => {
    const res = await emu().api('POST', '/users', registration('U006', { email: 'bad', member_code: 'NOPE', role: { id: 77 } }));
    expect(res.status).toBe(400);
    expect(res.body.errors).toHaveLength(3);
  });

  it('is not update-limited: more than 5 registers in a minute succeed', async () => {
    for (let i = 10; i < 17; i += 1) {
      const res = await emu().api('POST', '/users', registration(`U0${i}`));
      expect(res.status).toBe(200);
    }
  });

  it('with Dry-Run: 1 validates, answers the would-be user with the next id, and changes nothing', async () => {
    const before = data().users.length;
    const nextId = data().next_ids.user;
    const dry = await emu().api('POST', '/users', registration('U020'), { 'Dry-Run': '1' });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ id: nextId, member_code: 'U020', is_active: true });
    expect(data().users).toHaveLength(before);
    expect(data().next_ids.user).toBe(nextId);
    const invalid = await emu().api('POST', '/users', registration('U020', { role: { id: 77 } }), { 'Dry-Run': '1' });
    expect(invalid.status).toBe(400);
    const real = await emu().api('POST', '/users', registration('U020'));
    expect(real.body.id).toBe(nextId);
  });
});

describe('PATCH /users/{id} (api-v2.md 4.4 Users 3)', () => {
  it('changes only the fields sent and answers the user', async () => {
    const user = arrangeUser({ id: 600, member_code: 'U030', email: 'six@example.test', use_smartphone: false });
    const res = await emu().api('PATCH', '/users/600', { use_smartphone: true, role: { id: 1 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 600, email: 'six@example.test', member_code: 'U030', use_smartphone: true, role: { id: 1, type: 'Adm' } });
    expect(user.password).toBe('pw');
    const password = await emu().api('PATCH', '/users/600', { password: 'new-secret' });
    expect(password.body).not.toHaveProperty('password');
    expect(user.password).toBe('new-secret');
  });

  it('accepts an empty body and keeps everything', async () => {
    const res = await emu().api('PATCH', '/users/600', {});
    expect(res.status).toBe(200);
    expect(res.body.email).toBe('six@example.test');
  });

  it('keeps the secure-access option', async () => {
    const user = arrangeUser({ id: 601, use_secure: true });
    const res = await emu().api('PATCH', '/users/601', { email: 'secure@example.test', use_secure: false });
    expect(res.status).toBe(200);
    expect(user.use_secure).toBe(true);
    expect(user.email).toBe('secure@example.test');
  });

  it('applies the register checks to the fields sent', async () => {
    arrangeUser({ id: 602, member_code: 'U031', email: 'six-oh-two@example.test' });
    const role = await emu().api('PATCH', '/users/600', { role: { id: 77 } });
    expect(role.status).toBe(400);
    const linked = await emu().api('PATCH', '/users/600', { member_code: 'U031' });
    expect(linked.status).toBe(400);
    expect(linked.body.errors[0]).toMatch(/already linked to user 602/);
    const email = await emu().api('PATCH', '/users/600', { email: 'SIX-OH-TWO@example.test' });
    expect(email.status).toBe(400);
    const shape = await emu().api('PATCH', '/users/600', { email: 'nope' });
    expect(shape.status).toBe(400);
    const unknownMember = await emu().api('PATCH', '/users/600', { member_code: 'NOPE' });
    expect(unknownMember.status).toBe(400);
    const types = await emu().api('PATCH', '/users/600', { is_active: 1, member_code: null });
    expect(types.status).toBe(400);
    expect(types.body.errors).toHaveLength(2);
    expect(data().users.find((u) => u.id === 600)).toMatchObject({ member_code: 'U030', email: 'six@example.test', is_active: true });
  });

  it('lets a user keep its own email and member link', async () => {
    const res = await emu().api('PATCH', '/users/600', { email: 'six@example.test', member_code: 'U030' });
    expect(res.status).toBe(200);
  });

  it('answers 404 for an unknown user id', async () => {
    expect((await emu().api('PATCH', '/users/9999', { is_active: false })).status).toBe(404);
  });

  it('with Dry-Run: 1 answers the changed user and changes nothing', async () => {
    const dry = await emu().api('PATCH', '/users/600', { is_active: false }, { 'Dry-Run': '1' });
    expect(dry.status).toBe(200);
    expect(dry.body.is_active).toBe(false);
    expect(data().users.find((u) => u.id === 600)!.is_active).toBe(true);
  });
});

describe('DELETE /users/{id} (api-v2.md 4.4 Users 4)', () => {
  it('with Dry-Run: 1 answers 204 and keeps the user', async () => {
    arrangeUser({ id: 700 });
    const dry = await emu().api('DELETE', '/users/700', undefined, { 'Dry-Run': '1' });
    expect(dry.status).toBe(204);
    expect((await emu().api('GET', '/users/700')).status).toBe(200);
  });

  it('removes the user and answers 204 with no body; its extended access settings go with it', async () => {
    data().advanced_permissions.member.push({ user_id: 700, add_codes: ['U001'], exclusion_codes: [] });
    const res = await emu().api('DELETE', '/users/700');
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect((await emu().api('GET', '/users/700')).status).toBe(404);
    expect(data().advanced_permissions.member.some((p) => p.user_id === 700)).toBe(false);
  });

  it('answers 404 for an unknown user id', async () => {
    expect((await emu().api('DELETE', '/users/700')).status).toBe(404);
  });
});
