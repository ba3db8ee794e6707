/**
 * Sheet data as the legacy interface reads it (api-v1-legacy.md 2 "Sheet data", operation 8;
 * wire-format.md, Legacy v1.x): `member_code`, `member_name`, the fields as `definition_<id>`
 * (ids of the v2 layouts), `last_modified_by` and `last_modified_at`. Sheet 0 is the base
 * information, with the member custom fields as its definitions.
 *
 * Choices where both documents are silent:
 * - Sheet 0 also has `member_kana`, `mail`, the three dates, `gender`, `department_code` and
 *   `department_name` (the whole path, as v2 writes it), and `sub_department_codes` and
 *   `sub_department_names` (concurrent departments, joined by ","; names by " / ").
 * - Sheet records of other sheets carry `member_kana` in the asynchronous result only (its
 *   headers name it, api-v1-legacy.md 2); sheet 0 has it everywhere.
 * - File parts and formula parts are not part of v1: they are left out of reads, and writes refuse
 *   them as unknown definitions.
 * - A checkbox's several choices read as one string joined by ","; dates (and year-months) read
 *   `YYYY/MM/DD` (`YYYY/MM`); `last_modified_at` is the member's (sheet 0) or the sheet's last
 *   change, `YYYY/MM/DD HH:MM:SS`, and `last_modified_by` is `API`.
 * - A single-record sheet has one record per member (empty fields are ""); a multiple-record sheet
 *   one per record, none for a member without records. Members are in code order.
 * - An unknown sheet id is 404 on operation 8.
 */
import { peekEntry, sortedCodes } from '../../lazy-record.js';
import type { Company } from '../../company.js';
import type { FieldDef, Member, SheetState } from '../../model.js';
import { BASE_LAYOUT } from '../member-layout.js';
import { DepartmentIndex } from '../member-view.js';
import { noParameters, refuse, slashDate, type LegacyHandler } from './context.js';

/** The base keys of sheet 0 after `member_code`, `member_name` and `member_kana`. */
export const BASE_SHEET_KEYS = [
  'mail', 'entered_date', 'retired_date', 'gender', 'birthday',
  'department_code', 'department_name', 'sub_department_codes', 'sub_department_names',
] as const;
export const READ_ONLY_KEYS = ['department_name', 'sub_department_names', 'last_modified_by', 'last_modified_at'] as const;

const BASE_LABELS: Record<string, string> = {
  member_code: BASE_LAYOUT.code.name,
  member_name: BASE_LAYOUT.name.name,
  member_kana: BASE_LAYOUT.name_kana.name,
  mail: BASE_LAYOUT.mail.name,
  entered_date: BASE_LAYOUT.entered_date.name,
  retired_date: BASE_LAYOUT.retired_date.name,
  gender: BASE_LAYOUT.gender.name,
  birthday: BASE_LAYOUT.birthday.name,
  department_code: 'Department code',
  department_name: BASE_LAYOUT.department.name,
  sub_department_codes: 'Concurrent department codes',
  sub_department_names: BASE_LAYOUT.sub_departments.name,
};
const TRAILER = { last_modified_by: 'Last modified by', last_modified_at: 'Last modified at' };

/** Fields that travel through v1: not file parts, not formula parts. */
export const v1Fields = (fields: FieldDef[]): FieldDef[] => fields.filter((f) => f.kind !== 'attach_file' && f.kind !== 'calc_formula');

export interface LegacySheet {
  id: number;
  /** Undefined for sheet 0 (the base information). */
  state?: SheetState;
  fields: FieldDef[];
}

export function findLegacySheet(company: Company, rawId: string | undefined): LegacySheet | undefined {
  if (rawId === undefined || !/^\d{1,9}$/.test(rawId)) return undefined;
  const id = Number(rawId);
  if (id === 0) return { id, fields: v1Fields(company.data.member_fields) };
  const state = company.data.sheets[String(id)];
  return state ? { id, state, fields: v1Fields(state.def.fields) } : undefined;
}

export function requireSheet(company: Company, rawId: string | undefined): LegacySheet {
  const sheet = findLegacySheet(company, rawId);
  if (!sheet) throw refuse(404, `sheet ${rawId ?? ''} does not exist; sheet ids are those of the administrator screen, 0 for the base information`);
  return sheet;
}

export function sheetHeaders(sheet: LegacySheet, withKana: boolean): Record<string, string> {
  const headers: Record<string, string> = { member_code: BASE_LABELS.member_code!, member_name: BASE_LABELS.member_name! };
  if (withKana || sheet.id === 0) headers.member_kana = BASE_LABELS.member_kana!;
  if (sheet.id === 0) for (const key of BASE_SHEET_KEYS) headers[key] = BASE_LABELS[key]!;
  for (const field of sheet.fields) headers[`definition_${field.id}`] = field.name;
  return { ...headers, ...TRAILER };
}

/** One field's stored values as one v1 string. */
export function valueText(field: FieldDef, values: readonly string[] | undefined): string {
  if (!values?.length) return '';
  if (field.kind === 'date' || field.kind === 'year_month') return values.map((v) => slashDate(v)).join(',');
  return values.join(',');
}

function baseRecord(member: Member, departments: DepartmentIndex): Record<string, string> {
  return {
    mail: member.mail,
    entered_date: slashDate(member.entered_date),
    retired_date: slashDate(member.retired_date),
    gender: member.gender,
    birthday: slashDate(member.birthday),
    department_code: member.department_code ?? '',
    department_name: member.department_code ? departments.view(member.department_code).name : '',
    sub_department_codes: member.sub_department_codes.join(','),
    sub_department_names: member.sub_department_codes.map((c) => departments.view(c).name).join(' / '),
  };
}

export function sheetRecords(company: Company, sheet: LegacySheet, withKana: boolean): Record<string, string>[] {
  const { data } = company;
  const departments = new DepartmentIndex(data.departments);
  const out: Record<string, string>[] = [];
  for (const code of sortedCodes(data.members)) {
    const member = peekEntry(data.members, code)!;
    const head: Record<string, string> = { member_code: code, member_name: member.name };
    if (withKana || sheet.id === 0) head.member_kana = member.name_kana;
    if (sheet.id === 0) {
      const record: Record<string, string> = { ...head, ...baseRecord(member, departments) };
      for (const field of sheet.fields) record[`definition_${field.id}`] = valueText(field, member.custom_fields[String(field.id)]);
      out.push({ ...record, last_modified_by: 'API', last_modified_at: slashDate(member.updated_at) });
      continue;
    }
    const state = sheet.state!;
    const stored = peekEntry(state.records, code) ?? [];
    const records = state.def.record_type === 0 ? [stored[0]] : stored;
    for (const stored of records) {
      const record: Record<string, string> = { ...head };
      for (const field of sheet.fields) record[`definition_${field.id}`] = valueText(field, stored?.values[String(field.id)]);
      out.push({ ...record, last_modified_by: 'API', last_modified_at: slashDate(state.updated_at) });
    }
  }
  return out;
}

export const getSheet: LegacyHandler = (ctx) => {
  noParameters(ctx);
  const sheet = requireSheet(ctx.company, ctx.params.sheet_id);
  if (ctx.dryRun) return { body: { status: 'OK', headers: sheetHeaders(sheet, false) } };
  return { body: { status: 'OK', data: sheetRecords(ctx.company, sheet, false) } };
};
