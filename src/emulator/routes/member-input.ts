/**
 * From one element of a request's `member_data` to the member the write leaves behind, with one
 * problem per broken rule, each naming the member code (api-v2.md 4.4 Members 1-4).
 *
 * Two ways of reading an element:
 * - `full` (register, bulk update, replace all): the element is the whole member; a key that is
 *   absent leaves that information empty (4.4 Members 2: "information absent from the body is
 *   deleted"), and so does a custom field that is not listed.
 * - `partial` (partial update): only the keys sent change; an empty string clears (4.4 Members 3).
 * Either way, the member left behind must hold every field the layout marks required; a partial
 * update checks only the fields it sends, so it never fails over a field it does not touch.
 */
import type { FieldDef, Member, MemberFields } from '../model.js';
import type { MemberInput } from '../../spec/schemas.js';
import { isValidDate } from '../../spec/time.js';
import { checkFieldValues } from './custom-field-values.js';
import { BASE_LAYOUT, DATE_KEYS, GENDERS, TEXT_KEYS } from './member-layout.js';
import type { DepartmentIndex } from './member-view.js';

export type ReadMode = 'full' | 'partial';

export interface InputContext {
  departments: DepartmentIndex;
  fields: Map<string, FieldDef>;
  /** Codes of the members that exist once the request is applied (for face photo parts). */
  codesAfter: Set<string>;
  now: string;
}

export interface BuiltMember {
  member: MemberFields;
  problems: string[];
}

const length = (text: string): number => [...text].length;

function blankMember(code: string): MemberFields {
  return {
    code, name: '', name_kana: '', mail: '', entered_date: '', retired_date: '', gender: '', birthday: '',
    department_code: null, sub_department_codes: [], custom_fields: {}, updated_at: '',
  };
}

/** A department reference as sent: absent, cleared (null, "" or an empty code), or a code. */
function refCode(ref: MemberInput['department']): string | null | undefined {
  if (ref === undefined) return undefined;
  if (ref === null || ref === '') return null;
  return ref.code === '' ? null : ref.code;
}

export function buildMember(input: MemberInput, existing: Member | undefined, mode: ReadMode, ctx: InputContext): BuiltMember {
  const code = input.code;
  const what = `member ${code}`;
  const problems: string[] = [];
  const member: MemberFields =
    mode === 'partial' && existing
      ? { ...existing, sub_department_codes: [...existing.sub_department_codes], custom_fields: { ...existing.custom_fields } }
      : blankMember(code);
  member.updated_at = ctx.now;

  if (length(code) > BASE_LAYOUT.code.max_length!) {
    problems.push(`${what}: code is ${length(code)} characters, over the maximum length of ${BASE_LAYOUT.code.max_length}`);
  }
  for (const key of TEXT_KEYS) {
    const value = input[key];
    if (value === undefined) continue;
    const max = BASE_LAYOUT[key].max_length!;
    if (length(value) > max) problems.push(`${what}: ${key} is ${length(value)} characters, over the maximum length of ${max}`);
    member[key] = value;
  }
  for (const key of DATE_KEYS) {
    const value = input[key];
    if (value === undefined) continue;
    // An empty string clears a date (4.4 Members 3); any other value must be a real calendar date.
    if (value !== '' && !isValidDate(value)) problems.push(`${what}: ${key} must be a date YYYY-MM-DD or "", got "${value}"`);
    member[key] = value;
  }
  if (input.gender !== undefined) {
    if (input.gender !== '' && !(GENDERS as readonly string[]).includes(input.gender)) {
      problems.push(`${what}: gender must be one of ${GENDERS.join(', ')} or "", got "${input.gender}"`);
    }
    member.gender = input.gender;
  }
  applyDepartments(input, member, ctx, problems);
  const sentFields = applyCustomFields(input, member, ctx, problems);
  const checks = (key: string): boolean => mode === 'full' || (key === 'name' ? input.name !== undefined : sentFields.has(key));
  requireFields(member, ctx, checks, problems);
  return { member, problems };
}

function applyDepartments(input: MemberInput, member: MemberFields, ctx: InputContext, problems: string[]): void {
  const what = `member ${member.code}`;
  const primary = refCode(input.department);
  if (primary !== undefined) {
    if (primary !== null && !ctx.departments.has(primary)) {
      problems.push(`${what}: department "${primary}" does not exist in the department tree`);
    }
    member.department_code = primary;
  }
  if (input.sub_departments === undefined) return;
  const codes: string[] = [];
  for (const ref of input.sub_departments) {
    if (ref.code === '') {
      problems.push(`${what}: sub_departments holds an element with an empty code`);
    } else if (codes.includes(ref.code)) {
      problems.push(`${what}: sub_departments names department "${ref.code}" more than once`);
    } else {
      if (!ctx.departments.has(ref.code)) problems.push(`${what}: sub_departments: department "${ref.code}" does not exist in the department tree`);
      codes.push(ref.code);
    }
  }
  member.sub_department_codes = codes;
}

/** Applies the custom fields sent; answers the ids (as keys) that were sent. */
function applyCustomFields(input: MemberInput, member: MemberFields, ctx: InputContext, problems: string[]): Set<string> {
  const what = `member ${member.code}`;
  const sent = new Set<string>();
  for (const entry of input.custom_fields ?? []) {
    const key = String(entry.id);
    const field = ctx.fields.get(key);
    if (!field) {
      problems.push(`${what}: custom field ${entry.id} does not exist among the member fields`);
      continue;
    }
    if (sent.has(key)) {
      problems.push(`${what}: custom field ${entry.id} is sent more than once`);
      continue;
    }
    sent.add(key);
    const problem = valueProblem(field, entry.values, ctx);
    if (problem) {
      problems.push(`${what}: custom field ${field.id} ("${field.name}") ${problem}`);
      continue;
    }
    // An empty string (or no value) clears the field (4.4 Members 3).
    if (entry.values.every((v) => v === '')) delete member.custom_fields[key];
    else member.custom_fields[key] = [...entry.values];
  }
  return sent;
}

/** What is wrong with the values sent for one custom field, or undefined. */
function valueProblem(field: FieldDef, values: string[], ctx: InputContext): string | undefined {
  if (field.kind === 'calc_formula') return 'is a formula part: it is recalculated by the service and cannot be updated directly';
  if (field.kind === 'attach_file') return 'is a file part: files are updated through the attachment operations';
  const checked = checkFieldValues(field, values, (code) => ctx.codesAfter.has(code));
  return checked.ok ? undefined : checked.problem;
}

/** The layout's required flags hold for the member as the write leaves it. */
function requireFields(member: MemberFields, ctx: InputContext, checks: (key: string) => boolean, problems: string[]): void {
  const what = `member ${member.code}`;
  if (checks('name') && member.name === '') problems.push(`${what}: name is required`);
  for (const field of ctx.fields.values()) {
    if (!field.required || field.kind === 'calc_formula' || field.kind === 'attach_file') continue;
    if (!checks(String(field.id))) continue;
    if (!member.custom_fields[String(field.id)]?.length) {
      problems.push(`${what}: custom field ${field.id} ("${field.name}") is required`);
    }
  }
}
