/**
 * A member as `GET /members` answers it (wire-format.md, Members): the stored base information,
 * departments with `name` and `names` (root first), `age` and `years_of_service` on the service
 * clock, and the custom fields with `id`, `name` and `values` (formula parts computed).
 */
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
    return { code, name: this.byCode.get(code)?.name ?? '', names };
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

/**
 * Years of service on the service's today, or up to the retired date once it has passed; null
 * without an entered date, 0 before it.
 */
export function yearsOfServiceOf(member: Member, today: string): number | null {
  if (!member.entered_date) return null;
  const end = member.retired_date && member.retired_date < today ? member.retired_date : today;
  return Math.max(0, completedYears(member.entered_date, end));
}

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
    return { id: field.id, name: field.name, values: [...values] };
  });
  return {
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
  };
}
