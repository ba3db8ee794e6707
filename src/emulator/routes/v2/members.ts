/**
 * Members (api-v2.md 4.2, 4.4 Members 1-5; wire-format.md, Members): the layout, the listing, and
 * the five writes. Every write is one task that changes all of its members or none; after a change
 * the webhook events of api-v2.md section 6 are sent with the codes concerned.
 *
 * Choices where the specification is silent:
 * - Bulk update (PUT /members) changes the members it names, each as a whole (a key or custom
 *   field left out is cleared); members it does not name are unchanged, since it "neither
 *   registers nor deletes members" and clearing their required name could not succeed.
 * - `member_updated` names every member a request updated, whether or not a value differed.
 * - An empty `member_data` (or `codes`) is refused with 400, replace all included: an empty
 *   replace-all would delete every member, which is never what a client sending nothing meant.
 */
import { boolQuery, createTask, parseBody, requireNonEmpty, type RouteHandler, type TaskPlan } from '../context.js';
import type { Company } from '../../company.js';
import type { MemberFields } from '../../model.js';
import { deleteMembersBodySchema, memberDataBodySchema, type MemberInput } from '../../../spec/schemas.js';
import { memberLayoutBody } from '../member-layout.js';
import { DepartmentIndex, memberView } from '../member-view.js';
import { buildMember } from '../member-input.js';
import { applyMemberWrite, writeContext } from '../member-write.js';
import { removeMembers } from '../member-removal.js';
import { peekEntry, sortedCodes } from '../../lazy-record.js';
import { JsonParts } from '../../send.js';

export const memberLayout: RouteHandler = (ctx) => ({
  body: memberLayoutBody(ctx.company.data, boolQuery(ctx, 'get_calc_type')),
});

export const listMembers: RouteHandler = (ctx) => {
  const { data } = ctx.company;
  const today = ctx.company.clock.formatDate();
  const departments = new DepartmentIndex(data.departments);
  const member_data = (function* () {
    for (const code of sortedCodes(data.members)) yield memberView(data, departments, peekEntry(data.members, code)!, today);
  })();
  return { body: JsonParts.withList({ updated_at: data.members_updated_at }, 'member_data', member_data) };
};

type Operation = 'register' | 'bulkUpdate' | 'partialUpdate' | 'replaceAll';

function memberWriter(operation: Operation): RouteHandler {
  return (ctx) => {
    const body = parseBody(memberDataBodySchema, ctx.body);
    requireNonEmpty(body.member_data, 'member_data');
    // Replace all deletes only members whose registration is complete at request time (4.4 Members 4):
    // one registered by a task still waiting when this request came is kept.
    const registeredAtRequest = Object.keys(ctx.company.data.members);
    return createTask(ctx, body.member_data.length, () => planWrite(ctx.company, operation, body.member_data, registeredAtRequest));
  };
}

/** The first element of each code, with NG messages for empty and repeated codes. */
function distinctByCode(items: MemberInput[], errors: string[]): MemberInput[] {
  const seen = new Set<string>();
  const distinct: MemberInput[] = [];
  items.forEach((item, index) => {
    if (item.code === '') {
      errors.push(`member_data[${index}]: code is required and must not be empty`);
    } else if (seen.has(item.code)) {
      errors.push(`member ${item.code}: appears more than once in member_data`);
    } else {
      seen.add(item.code);
      distinct.push(item);
    }
  });
  return distinct;
}

function planWrite(company: Company, operation: Operation, items: MemberInput[], registeredAtRequest: string[]): TaskPlan {
  const { data } = company;
  const errors: string[] = [];
  const distinct = distinctByCode(items, errors);
  const sent = new Set(distinct.map((m) => m.code));
  // Replace all: a known member absent from the request is deleted (4.4 Members 4).
  const deleted = operation === 'replaceAll' ? registeredAtRequest.filter((code) => !sent.has(code) && data.members[code]) : [];
  const input = writeContext(company, sent, deleted);

  const created: MemberFields[] = [];
  const updated: MemberFields[] = [];
  for (const item of distinct) {
    const existing = data.members[item.code];
    if (operation === 'register' && existing) {
      errors.push(`member ${item.code}: a member with this code already exists; register is only for new members (use bulk or partial update)`);
      continue;
    }
    if ((operation === 'bulkUpdate' || operation === 'partialUpdate') && !existing) {
      errors.push(`member ${item.code}: no member has this code; updates do not register members (use register)`);
      continue;
    }
    const built = buildMember(item, existing, operation === 'partialUpdate' ? 'partial' : 'full', input);
    errors.push(...built.problems);
    (existing ? updated : created).push(built.member);
  }

  return {
    errors,
    apply: () => applyMemberWrite(company, created, updated, deleted),
  };
}

export const registerMembers = memberWriter('register');
export const bulkUpdateMembers = memberWriter('bulkUpdate');
export const partialUpdateMembers = memberWriter('partialUpdate');
export const replaceAllMembers = memberWriter('replaceAll');

export const deleteMembers: RouteHandler = (ctx) => {
  const body = parseBody(deleteMembersBodySchema, ctx.body);
  requireNonEmpty(body.codes, 'codes');
  return createTask(ctx, body.codes.length, () => planDelete(ctx.company, body.codes));
};

function planDelete(company: Company, codes: string[]): TaskPlan {
  const errors: string[] = [];
  const seen = new Set<string>();
  for (const code of codes) {
    if (seen.has(code)) errors.push(`member ${code}: appears more than once in codes`);
    else if (!company.data.members[code]) errors.push(`member ${code}: no member has this code`);
    seen.add(code);
  }
  return {
    errors,
    apply: () => {
      removeMembers(company, [...seen]);
      company.data.members_updated_at = company.now();
      company.emitMemberEvent('member_deleted', [...seen]);
    },
  };
}
