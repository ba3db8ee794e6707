/**
 * A member as `GET /members` answers it (wire-format.md, Members and "Real-client facts"): the
 * stored base information, departments with `name` (the whole path) and `names` (root first),
 * `age` and `years_of_service` on the service clock, and the custom fields with `id`, `name` and
 * `values` (formula parts computed, `[""]` when empty), the service's integer `id`, and
 * `face_image` with the photo's time (null without a photo).
 */
import { peekEntry } from '../lazy-record.js';
import type { CompanyData, Department, Member } from '../model.js';
import { evaluateFormula } from './member-formula.js';

export interface DepartmentView {
  code: string;
  name: string;
  names: string[];
}

/** Looks departments up by code and gives their path names, root first. */
export class DepartmentIndex {
  private readonly byCode = new Map<string, Department>();

  constructor(departments: Department[]) {
    for (const d of departments) this.byCode.set(d.code, d);
  }

  has(code: string): boolean {
    return this.byCode.has(code);
  }

  view(code: string): DepartmentView {
    const names: string[] = [];
    const seen = new Set<string>();
    let current = this.byCode.get(code);
    // The tree has no cycles (PUT /departments refuses them); `seen` guards data loaded from a seed.
    while (current && !seen.has(current.code)) {
      seen.add(current.code);
      names.unshift(current.name);
      current = current.parent_code ? this.byCode.get(current.parent_code) : undefined;
    }
    // wire-format.md, "Real-client facts": `name` is the whole path, root first, joined by one
    // space ("営業本部 第一営業部 ITグループ"), for the primary and each concurrent department.
    return { code, name: names.join(' '), names };
  }
}

/** Whole years from `from` to `to` (both `YYYY-MM-DD`); a birthday on 29 February counts from 1 March. */
export function completedYears(from: string, to: string): number {
  const years = Number(to.slice(0, 4)) - Number(from.slice(0, 4));
  return to.slice(5) < from.slice(5) ? years - 1 : years;
}

/** Age on the service's today; null without a birthday. */
export function ageOf(member: Member, today: string): number | null {
  if (!member.birthday) return null;
  return Math.max(0, completedYears(member.birthday, today));
}

/** Whole months from `from` to `to` (both `YYYY-MM-DD`). */
export function completedMonths(from: string, to: string): number {
  const months = (Number(to.slice(0, 4)) - Number(from.slice(0, 4))) * 12 + Number(to.slice(5, 7)) - Number(from.slice(5, 7));
  return to.slice(8) < from.slice(8) ? months - 1 : months;
}

/**
 * Years of service on the service's today, or up to the retired date once it has passed, as the
 * real service writes it: years, then months, "15年5ヵ月" (wire-format.md, "Real-client facts").
 * "0年0ヵ月" before the entered date; "" without one, as `retired_date` is "" when there is none.
 */
export function yearsOfServiceOf(member: Member, today: string): string {
  if (!member.entered_date) return '';
  const end = member.retired_date && member.retired_date < today ? member.retired_date : today;
  const months = Math.max(0, completedMonths(member.entered_date, end));
  return `${Math.floor(months / 12)}年${months % 12}ヵ月`;
}

/**
 * `values` as the service answers them: never empty, `[""]` for an empty field, because a real
 * client reads `values[0]` without checking (wire-format.md, "Real-client facts").
 */
export const answerValues = (values: readonly string[]): string[] => (values.length ? [...values] : ['']);

export function memberView(data: CompanyData, departments: DepartmentIndex, member: Member, today: string): Record<string, unknown> {
  // A formula refers to number box parts only, as on sheets (formula.ts); anything else reads as blank.
  const numbers: Record<string, string[]> = {};
  for (const field of data.member_fields) {
    if (field.kind === 'number_box') numbers[String(field.id)] = member.custom_fields[String(field.id)] ?? [];
  }
  const custom_fields = data.member_fields.map((field) => {
    const key = String(field.id);
    let values = member.custom_fields[key] ?? [];
    if (field.kind === 'calc_formula') {
      const value = field.formula ? evaluateFormula(field.formula, numbers) : null;
      values = value === null ? [] : [value];
    }
    return { id: field.id, name: field.name, values: answerValues(values) };
  });
  const photo = peekEntry(data.photos, member.code);
  return {
    id: member.id,
    code: member.code,
    name: member.name,
    name_kana: member.name_kana,
    mail: member.mail,
    entered_date: member.entered_date,
    retired_date: member.retired_date,
    gender: member.gender,
    birthday: member.birthday,
    age: ageOf(member, today),
    years_of_service: yearsOfServiceOf(member, today),
    department: member.department_code ? departments.view(member.department_code) : null,
    sub_departments: member.sub_department_codes.map((code) => departments.view(code)),
    custom_fields,
    face_image: photo ? { updated_at: photo.updated_at } : null,
  };
}
