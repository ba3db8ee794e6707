/**
 * Login users (api-v2.md 2 User and 4.4 Users; wire-format.md, Users): list, get, register, update
 * and delete. The writes answer synchronously with the user (wire-format.md, Common); a dry run
 * validates fully, answers as if done and changes nothing.
 */
import { intParam, type RouteContext, type RouteHandler } from '../context.js';
import { jsonObject, refuseIfAny } from '../json-object.js';
import { notFound } from '../../http-error.js';
import type { CompanyData, User } from '../../model.js';
import { ADVANCED_TYPES } from '../../../spec/operations.js';
import { roleView } from './roles.js';

/** Something, an @, a dotted domain; no spaces. The service's exact rule is not shown. */
const EMAIL_SHAPE = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const FLAGS = ['is_active', 'password_locked', 'use_smartphone', 'use_native_app'] as const;
/** Required on register (api-v2.md 4.4 Users 1). */
const REQUIRED = ['email', 'member_code', 'password', 'role'] as const;

type UserFields = Partial<Pick<User, 'email' | 'member_code' | 'password' | 'role_id' | (typeof FLAGS)[number]>>;

/** The user as answered: never the password, nor the secure-access option (api-v2.md 2 User). */
export function userView(data: CompanyData, user: User): Record<string, unknown> {
  const role = data.roles.find((r) => r.id === user.role_id);
  return {
    id: user.id,
    email: user.email,
    member_code: user.member_code,
    role: role ? roleView(role) : { id: user.role_id },
    is_active: user.is_active,
    password_locked: user.password_locked,
    use_smartphone: user.use_smartphone,
    use_native_app: user.use_native_app,
    last_login_at: user.last_login_at,
  };
}

function findUser(ctx: RouteContext): User {
  const id = intParam(ctx, 'user_id');
  const user = ctx.company.data.users.find((u) => u.id === id);
  if (!user) throw notFound(`user ${id}`);
  return user;
}

/**
 * Reads the fields a body sends and checks each against the company's data. `self` is the user
 * being updated: its own email and member link do not count as taken. Keys the service does not
 * take (the secure-access option, id, last_login_at) are ignored: secure access is stopped on
 * register and keeps its value on update (4.4 Users 2, 3).
 */
function checkFields(data: CompanyData, body: Record<string, unknown>, self?: User): { fields: UserFields; problems: string[] } {
  const fields: UserFields = {};
  const problems: string[] = [];

  const { email, member_code: memberCode, password, role } = body;
  if (email !== undefined) {
    if (typeof email !== 'string') problems.push('email must be a string');
    else if (!EMAIL_SHAPE.test(email)) problems.push(`email "${email}" is not a mail address`);
    else {
      const owner = data.users.find((u) => u !== self && u.email.toLowerCase() === email.toLowerCase());
      if (owner) problems.push(`email "${email}" is already used by user ${owner.id}`);
      else fields.email = email;
    }
  }
  if (memberCode !== undefined) {
    if (typeof memberCode !== 'string') problems.push('member_code must be a string');
    else if (!data.members[memberCode]) problems.push(`member_code "${memberCode}": no member has this code`);
    else {
      const linked = data.users.find((u) => u !== self && u.member_code === memberCode);
      if (linked) problems.push(`member_code "${memberCode}" is already linked to user ${linked.id}`);
      else fields.member_code = memberCode;
    }
  }
  if (password !== undefined) {
    if (typeof password !== 'string' || password === '') problems.push('password must be a non-empty string');
    else fields.password = password;
  }
  if (role !== undefined) {
    const id = typeof role === 'object' && role !== null ? (role as Record<string, unknown>).id : undefined;
    if (typeof id !== 'number' || !Number.isInteger(id)) problems.push('role must be an object with an integer id, as {"id": 1}');
    else if (!data.roles.some((r) => r.id === id)) problems.push(`role: no role has id ${id}`);
    else fields.role_id = id;
  }
  for (const flag of FLAGS) {
    const value = body[flag];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') problems.push(`${flag} must be true or false`);
    else fields[flag] = value;
  }
  return { fields, problems };
}

export const listUsers: RouteHandler = (ctx) => {
  const { data } = ctx.company;
  const users = [...data.users].sort((a, b) => a.id - b.id);
  return { body: { user_data: users.map((u) => userView(data, u)) } };
};

export const getUser: RouteHandler = (ctx) => ({ body: userView(ctx.company.data, findUser(ctx)) });

/**
 * Register (4.4 Users 1, 2). A dry run answers the user it would create, with the id the next
 * register would get; that id is not used up.
 */
export const registerUser: RouteHandler = (ctx) => {
  const { company } = ctx;
  const { data } = company;
  const body = jsonObject(ctx.body);
  const missing = REQUIRED.filter((key) => body[key] === undefined).map((key) => `${key} is required`);
  const { fields, problems } = checkFields(data, body);
  refuseIfAny([...missing, ...problems]);
  // Every required key was present and valid, so checkFields set each of them.
  const given = fields as Required<UserFields>;
  const user: User = {
    id: data.next_ids.user,
    email: given.email,
    member_code: given.member_code,
    password: given.password,
    role_id: given.role_id,
    // Defaults when unspecified (4.4 Users 2).
    is_active: fields.is_active ?? true,
    password_locked: fields.password_locked ?? false,
    use_smartphone: fields.use_smartphone ?? false,
    use_native_app: fields.use_native_app ?? data.auto_enable_native_app,
    use_secure: false,
    last_login_at: null,
  };
  if (!ctx.dryRun) {
    data.next_ids.user += 1;
    data.users.push(user);
    company.changed();
  }
  return { body: userView(data, user) };
};

/** Update: every field optional; the secure-access option keeps its value (4.4 Users 3). */
export const updateUser: RouteHandler = (ctx) => {
  const { company } = ctx;
  const user = findUser(ctx);
  const body = jsonObject(ctx.body);
  const { fields, problems } = checkFields(company.data, body, user);
  refuseIfAny(problems);
  if (ctx.dryRun) return { body: userView(company.data, { ...user, ...fields }) };
  Object.assign(user, fields);
  company.changed();
  return { body: userView(company.data, user) };
};

/** Delete removes the login user (4.4 Users 4); its extended access settings go with it. */
export const deleteUser: RouteHandler = (ctx) => {
  const { company } = ctx;
  const user = findUser(ctx);
  if (!ctx.dryRun) {
    const { data } = company;
    data.users = data.users.filter((u) => u !== user);
    for (const type of ADVANCED_TYPES) {
      data.advanced_permissions[type] = data.advanced_permissions[type].filter((p) => p.user_id !== user.id);
    }
    company.changed();
  }
  return { status: 204 };
};
