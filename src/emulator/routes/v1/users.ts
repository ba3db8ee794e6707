/**
 * Users through the legacy interface (api-v1-legacy.md 2 "User record", 4 operations 2-4): the
 * read with passwords as `****`, the overwrite (users absent are deleted) and the add.
 *
 * Choices where both documents are silent:
 * - A user is identified by `email` (the login id), compared without case.
 * - `role` names a role by its name; `type` and `name` are read-only (the role's type and the
 *   linked member's name) and are ignored when sent back, as are the read-only timestamps.
 * - A flag sent as `"-"`, and a password sent as `"-"` or `"****"`, keep the current value; for a
 *   new user they mean the default (active, other flags off) and "no password" (refused).
 * - Add only adds: an email that already exists is NG, naming it (overwrite changes users).
 * - An overwrite that would leave the company without an active administrator is NG: the account
 *   that runs the integration would lock everyone out.
 * - A user's `member_code` must name a member and no other user may be linked to it; `""` or null
 *   means no member.
 */
import { z } from 'zod';
import type { Company } from '../../company.js';
import type { CompanyData, User } from '../../model.js';
import { ADVANCED_TYPES } from '../../../spec/operations.js';
import { roleTypeOnWire } from '../v2/roles.js';
import { noParameters, parseLegacyBody, slashDate, updateAnswer, type LegacyHandler, type LegacyPlan } from './context.js';

const EMAIL_SHAPE = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const TIMESTAMP = /^(\d{4})[-/](\d{2})[-/](\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

export const USER_HEADERS: Record<string, string> = {
  email: 'Login ID (email)',
  password: 'Password',
  member_code: 'Employee number',
  name: 'Name',
  type: 'Account type',
  role: 'Role',
  is_active: 'Account enabled',
  password_locked: 'Password change allowed',
  use_smartphone: 'Smartphone option',
  use_secure: 'Secure access',
  created_at: 'Created at',
  last_logined_at: 'Last login',
  password_modified_at: 'Password changed at',
  last_modified_by: 'Last modified by',
  last_modified_at: 'Last modified at',
};

const flag = z.union([z.boolean(), z.literal('-')], { error: 'must be true, false or "-"' });
const text = z.string({ error: 'must be a string' });
const optionalText = z.union([text, z.null()]).optional();

const userInputSchema = z.strictObject({
  email: text,
  password: text.optional(),
  member_code: optionalText,
  name: optionalText,
  type: optionalText,
  role: text.optional(),
  is_active: flag.optional(),
  password_locked: flag.optional(),
  use_smartphone: flag.optional(),
  use_secure: flag.optional(),
  created_at: optionalText,
  last_logined_at: optionalText,
  password_modified_at: optionalText,
  last_modified_by: optionalText,
  last_modified_at: optionalText,
});
type UserInput = z.infer<typeof userInputSchema>;

const usersBodySchema = z.strictObject({ users: z.array(userInputSchema, { error: 'must be an array of users' }).min(1, 'must hold at least one user') });

function userRecord(data: CompanyData, user: User): Record<string, unknown> {
  const role = data.roles.find((r) => r.id === user.role_id);
  const member = user.member_code ? data.members[user.member_code] : undefined;
  return {
    email: user.email,
    password: '****',
    member_code: user.member_code ?? '',
    name: member?.name ?? '',
    type: role ? roleTypeOnWire(role) : '',
    role: role?.name ?? '',
    is_active: user.is_active,
    password_locked: user.password_locked,
    use_smartphone: user.use_smartphone,
    use_secure: user.use_secure,
    created_at: user.created_at ?? '',
    last_logined_at: user.last_login_at ?? '',
    password_modified_at: user.password_modified_at ?? '',
    last_modified_by: user.last_modified_at ? 'API' : '',
    last_modified_at: slashDate(user.last_modified_at),
  };
}

export const listUsers: LegacyHandler = (ctx) => {
  noParameters(ctx);
  if (ctx.dryRun) return { body: { headers: USER_HEADERS } };
  const { data } = ctx.company;
  const users = [...data.users].sort((a, b) => a.id - b.id).map((u) => userRecord(data, u));
  return { body: { headers: USER_HEADERS, users } };
};

const FLAGS = ['is_active', 'password_locked', 'use_smartphone', 'use_secure'] as const;
const FLAG_DEFAULTS: Record<(typeof FLAGS)[number], boolean> = { is_active: true, password_locked: false, use_smartphone: false, use_secure: false };

/** The user the request leaves behind for one element, with its problems. */
function buildUser(data: CompanyData, item: UserInput, existing: User | undefined, mode: 'overwrite' | 'add', now: string, problems: string[]): User {
  const what = `user ${item.email}`;
  const user: User = existing
    ? { ...existing }
    : {
        id: 0, email: item.email, member_code: null, password: '', role_id: 0,
        ...FLAG_DEFAULTS, use_native_app: data.auto_enable_native_app, last_login_at: null, created_at: now,
      };
  if (!EMAIL_SHAPE.test(item.email)) problems.push(`${what}: email is not a mail address`);
  user.email = item.email;
  const keepsPassword = item.password === undefined || item.password === '-' || item.password === '****';
  if (!keepsPassword) {
    if (item.password === '') problems.push(`${what}: password must not be empty`);
    user.password = item.password!;
    user.password_modified_at = now;
  } else if (!existing) problems.push(`${what}: a new user needs a password`);
  if (item.role !== undefined && item.role !== '-') {
    const role = data.roles.find((r) => r.name === item.role);
    if (!role) problems.push(`${what}: no role is named "${item.role}"; roles: ${data.roles.map((r) => r.name).join(', ')}`);
    else user.role_id = role.id;
  } else if (!existing) problems.push(`${what}: a new user needs a role`);
  if (item.member_code !== undefined && item.member_code !== '-') {
    const code = item.member_code || null;
    if (code !== null && !data.members[code]) problems.push(`${what}: member_code "${code}": no member has this code`);
    user.member_code = code;
  }
  for (const key of FLAGS) {
    const value = item[key];
    if (typeof value === 'boolean') user[key] = value;
  }
  if (mode === 'add' && item.created_at) {
    const m = TIMESTAMP.exec(item.created_at);
    if (!m) problems.push(`${what}: created_at must be YYYY-MM-DD HH:MM:SS, got "${item.created_at}"`);
    else user.created_at = `${m[1]}-${m[2]}-${m[3]} ${m[4]}:${m[5]}:${m[6]}`;
  }
  user.last_modified_at = now;
  return user;
}

function planUsers(company: Company, items: UserInput[], mode: 'overwrite' | 'add'): LegacyPlan {
  const { data } = company;
  const now = company.now();
  const errors: string[] = [];
  const byEmail = new Map(data.users.map((u) => [u.email.toLowerCase(), u]));
  const seen = new Set<string>();
  const kept: User[] = [];
  const added: User[] = [];
  for (const item of items) {
    const key = item.email.toLowerCase();
    if (seen.has(key)) {
      errors.push(`user ${item.email}: appears more than once in users`);
      continue;
    }
    seen.add(key);
    const existing = byEmail.get(key);
    if (mode === 'add' && existing) {
      errors.push(`user ${item.email}: a user with this email already exists; add only adds users (overwrite changes them)`);
      continue;
    }
    const user = buildUser(data, item, existing, mode, now, errors);
    (existing ? kept : added).push(user);
  }
  const deleted = mode === 'overwrite' ? data.users.filter((u) => !seen.has(u.email.toLowerCase())) : [];
  const after = mode === 'overwrite' ? [...kept, ...added] : [...data.users, ...added];
  const linked = new Map<string, string>();
  for (const user of after) {
    if (!user.member_code) continue;
    const other = linked.get(user.member_code);
    if (other !== undefined) errors.push(`user ${user.email}: member_code "${user.member_code}" is already linked to user ${other}`);
    else linked.set(user.member_code, user.email);
  }
  const adminRoles = new Set(data.roles.filter((r) => r.type === 'Adm').map((r) => r.id));
  const activeAdmin = (list: User[]): boolean => list.some((u) => u.is_active && adminRoles.has(u.role_id));
  if (activeAdmin(data.users) && !activeAdmin(after)) {
    errors.push('users: the request would leave no active administrator; keep at least one user of an administrator role enabled');
  }
  return {
    errors,
    apply: () => {
      for (const user of added) user.id = data.next_ids.user++;
      const byId = new Map(kept.map((u) => [u.id, u]));
      data.users = mode === 'overwrite'
        ? [...kept, ...added]
        : [...data.users.map((u) => byId.get(u.id) ?? u), ...added];
      const gone = new Set(deleted.map((u) => u.id));
      for (const type of ADVANCED_TYPES) {
        data.advanced_permissions[type] = data.advanced_permissions[type].filter((p) => !gone.has(p.user_id));
      }
    },
  };
}

export const overwriteUsers: LegacyHandler = (ctx) => {
  const body = parseLegacyBody(usersBodySchema, ctx.body);
  return updateAnswer(ctx, body.users.length, () => planUsers(ctx.company, body.users, 'overwrite'));
};

export const addUsers: LegacyHandler = (ctx) => {
  const body = parseLegacyBody(usersBodySchema, ctx.body);
  return updateAnswer(ctx, body.users.length, () => planUsers(ctx.company, body.users, 'add'));
};
