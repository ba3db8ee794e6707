/**
 * What a members write does the same way through v2's members routes and the legacy sheet 0:
 * the context its members are checked in, and saving them with their events.
 */
import type { Company } from '../company.js';
import type { MemberFields } from '../model.js';
import type { InputContext } from './member-input.js';
import { DepartmentIndex } from './member-view.js';
import { removeMembers } from './member-removal.js';

/** The company's departments and fields, and the member codes there will be after the write (those sent added, those deleted gone). */
export function writeContext(company: Company, sent: Iterable<string>, deleted: string[]): InputContext {
  const { data } = company;
  const codesAfter = new Set([...Object.keys(data.members), ...sent]);
  for (const code of deleted) codesAfter.delete(code);
  return {
    departments: new DepartmentIndex(data.departments),
    fields: new Map(data.member_fields.map((f) => [String(f.id), f])),
    codesAfter,
    now: company.now(),
  };
}

/**
 * Saves the created and updated members, removes the deleted ones, and tells the webhooks of each.
 * A member keeps the id it was registered with; a new one takes the next id, which no deleted
 * member ever had (wire-format.md, "Real-client facts").
 */
export function applyMemberWrite(company: Company, created: MemberFields[], updated: MemberFields[], deleted: string[]): void {
  const { data } = company;
  for (const member of [...created, ...updated]) {
    data.members[member.code] = { ...member, id: data.members[member.code]?.id ?? data.next_ids.member++ };
  }
  removeMembers(company, deleted);
  data.members_updated_at = company.now();
  company.emitMemberEvent('member_created', created.map((m) => m.code));
  company.emitMemberEvent('member_updated', updated.map((m) => m.code));
  company.emitMemberEvent('member_deleted', deleted);
}
