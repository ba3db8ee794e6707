/**
 * Extended access settings (api-v2.md 2, 4.2 and 4.4 Extended access settings; wire-format.md):
 * the settings of one kind, and the replace-all task that swaps every setting of that kind for the
 * request's data.
 */
import { createTask, parseBody, type RouteContext, type RouteHandler, type TaskPlan } from '../context.js';
import { badRequest } from '../../http-error.js';
import type { AdvancedPermission } from '../../model.js';
import type { Company } from '../../company.js';
import { advancedPermissionsSchema } from '../../../spec/schemas.js';
import { ADVANCED_TYPES, type AdvancedType } from '../../../spec/operations.js';
import { MAX_ADVANCED_PERMISSION_CODES } from '../../../spec/limits.js';

const CODE_LISTS = ['add_codes', 'exclusion_codes'] as const;
/** How many codes a message quotes before it only counts the rest. */
const QUOTED = 10;

/** `advanced_type` is an enum parameter (api-v2.md 4.2): another value is a parameter error, 400. */
function advancedType(ctx: RouteContext): AdvancedType {
  const value = ctx.params.advanced_type ?? '';
  const found = ADVANCED_TYPES.find((t) => t === value);
  if (!found) throw badRequest(`advanced_type must be member or department, got "${value}"`);
  return found;
}

const copy = (p: AdvancedPermission): AdvancedPermission => ({
  user_id: p.user_id, add_codes: [...p.add_codes], exclusion_codes: [...p.exclusion_codes],
});

export const listAdvancedPermissions: RouteHandler = (ctx) => {
  const type = advancedType(ctx);
  return { body: { advanced_permission_data: ctx.company.data.advanced_permissions[type].map(copy) } };
};

/**
 * Replace all (4.4 Extended access settings). An empty `advanced_permission_data` is accepted: it
 * replaces every setting with none.
 */
export const replaceAdvancedPermissions: RouteHandler = (ctx) => {
  const type = advancedType(ctx);
  const body = parseBody(advancedPermissionsSchema, ctx.body);
  const items = body.advanced_permission_data.map(copy);
  return createTask(ctx, items.length, () => planReplace(ctx.company, type, items));
};

function quote(codes: string[]): string {
  const shown = codes.slice(0, QUOTED).map((c) => `"${c}"`).join(', ');
  return codes.length > QUOTED ? `${shown} and ${codes.length - QUOTED} more` : shown;
}

function repeated(codes: string[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const code of codes) (seen.has(code) ? twice : seen).add(code);
  return [...twice];
}

function planReplace(company: Company, type: AdvancedType, items: AdvancedPermission[]): TaskPlan {
  const { data } = company;
  const limit = MAX_ADVANCED_PERMISSION_CODES[type];
  // Member settings name members, department settings name departments.
  const known = new Set(type === 'member' ? Object.keys(data.members) : data.departments.map((d) => d.code));
  const noun = type === 'member' ? 'member' : 'department';
  const errors: string[] = [];
  const seenUsers = new Set<number>();
  for (const item of items) {
    const who = `user ${item.user_id}`;
    if (seenUsers.has(item.user_id)) {
      errors.push(`${who}: appears more than once in advanced_permission_data`);
      continue;
    }
    seenUsers.add(item.user_id);
    if (!data.users.some((u) => u.id === item.user_id)) {
      errors.push(`${who}: no user has this id`);
      continue;
    }
    for (const list of CODE_LISTS) {
      const codes = item[list];
      if (codes.length > limit) {
        errors.push(`${who}: ${list} holds ${codes.length} codes, over the limit of ${limit} per user for ${type} settings`);
      }
      const unknown = codes.filter((c) => !known.has(c));
      if (unknown.length) errors.push(`${who}: ${list}: no ${noun} has the code ${quote(unknown)}`);
      const twice = repeated(codes);
      if (twice.length) errors.push(`${who}: ${list} names ${quote(twice)} more than once`);
    }
    const excluded = new Set(item.exclusion_codes);
    const both = [...new Set(item.add_codes.filter((c) => excluded.has(c)))];
    if (both.length) errors.push(`${who}: ${quote(both)} is in both add_codes and exclusion_codes`);
  }
  return {
    errors,
    apply: () => {
      data.advanced_permissions[type] = items;
    },
  };
}
