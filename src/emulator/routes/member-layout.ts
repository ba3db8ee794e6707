/**
 * The member layout (api-v2.md 2, "Member layout"; 4.2 `GET /member_layouts`): the base fields
 * with their labels, required flags, types and maximum lengths, and the member custom fields. The
 * write operations enforce what this layout announces, so a client that plans by the layout passes.
 */
import type { CompanyData, FieldDef, FieldKind } from '../model.js';

/** The keys of the base information, in layout order (api-v2.md 2). */
export const BASE_KEYS = [
  'code', 'name', 'name_kana', 'mail', 'entered_date', 'retired_date', 'gender', 'birthday', 'department', 'sub_departments',
] as const;
export type BaseKey = (typeof BASE_KEYS)[number];

/** The text keys of the base information; the others are dates, gender and departments. */
export const TEXT_KEYS = ['name', 'name_kana', 'mail'] as const;
export const DATE_KEYS = ['entered_date', 'retired_date', 'birthday'] as const;

/**
 * Gender choices. api-v2.md leaves them unstated; these are the values the real service uses
 * (wire-format.md takes shapes from its public clients). An empty string clears the gender.
 */
export const GENDERS = ['男性', '女性'] as const;

export interface LayoutEntry {
  name: string;
  required: boolean;
  type: string;
  max_length: number | null;
  enum: string[] | null;
}

/**
 * api-v2.md names the base fields but not their limits. The code and the name are what identify a
 * member, so they are required; the lengths are the emulator's choice and are enforced on writes.
 * Types follow the public clients of the service: `string`, `date`, `enum`, `department`,
 * `department[]`.
 */
export const BASE_LAYOUT: Record<BaseKey, LayoutEntry> = {
  code: { name: 'Employee number', required: true, type: 'string', max_length: 50, enum: [] },
  name: { name: 'Name', required: true, type: 'string', max_length: 100, enum: [] },
  name_kana: { name: 'Name (kana)', required: false, type: 'string', max_length: 100, enum: [] },
  mail: { name: 'Mail address', required: false, type: 'string', max_length: 100, enum: [] },
  entered_date: { name: 'Entered date', required: false, type: 'date', max_length: null, enum: [] },
  retired_date: { name: 'Retired date', required: false, type: 'date', max_length: null, enum: [] },
  gender: { name: 'Gender', required: false, type: 'enum', max_length: null, enum: [...GENDERS] },
  birthday: { name: 'Birthday', required: false, type: 'date', max_length: null, enum: [] },
  department: { name: 'Department', required: false, type: 'department', max_length: null, enum: [] },
  sub_departments: { name: 'Concurrent departments', required: false, type: 'department[]', max_length: null, enum: [] },
};

const TYPE_OF_KIND: Record<FieldKind, string> = {
  text_box: 'string', text_area: 'string', link: 'string', face_image: 'string', attach_file: 'string',
  number_box: 'number', date: 'date', year_month: 'date',
  pulldown: 'enum', radio: 'enum', checkbox: 'enum', calc_formula: 'calc',
};

/**
 * The `type_detail` the service shows for each kind (wire-format.md, "Real-client facts": the
 * choice parts are `pull_down`, `radio_button` and `check_box`; one real client refuses any value
 * outside that list). The seed format keeps its shorter kind names; only the wire uses these.
 */
export const TYPE_DETAIL_OF_KIND = {
  text_box: 'text_box', text_area: 'text_area', number_box: 'number_box',
  pulldown: 'pull_down', radio: 'radio_button', checkbox: 'check_box',
  link: 'link', date: 'date', year_month: 'year_month',
  attach_file: 'attach_file', face_image: 'face_image', calc_formula: 'calc_formula',
} as const satisfies Record<FieldKind, string>;
export type TypeDetail = (typeof TYPE_DETAIL_OF_KIND)[FieldKind];

export const isChoiceKind = (kind: FieldKind): boolean => kind === 'pulldown' || kind === 'radio' || kind === 'checkbox';

export interface CustomFieldLayout extends LayoutEntry {
  id: number;
  type_detail: TypeDetail;
  read_only?: true;
}

/**
 * One custom field as the layout shows it (wire-format.md, Sheets: the same element shape), in the
 * member layout or a sheet layout: they differ only in a formula field's `enum`.
 */
export function customFieldLayout(field: FieldDef, where: 'member' | 'sheet'): CustomFieldLayout {
  const type = TYPE_OF_KIND[field.kind];
  const entry: CustomFieldLayout = {
    id: field.id,
    name: field.name,
    required: field.required,
    type,
    type_detail: TYPE_DETAIL_OF_KIND[field.kind],
    max_length: type === 'string' ? field.max_length : null,
    enum: isChoiceKind(field.kind) ? (field.options ?? []).map((o) => o.name) : [],
  };
  // wire-format.md, "Real-client facts": formula fields carry `"read_only": true` (they cannot be
  // updated directly, api-v2.md 2); their `enum` is `[]` in sheet layouts, like every sheet
  // field's, and null in the member layout.
  if (field.kind === 'calc_formula') {
    entry.read_only = true;
    if (where === 'member') entry.enum = null;
  }
  return entry;
}

/** The layout answer; formula parts only with `get_calc_type=true` (api-v2.md 2, custom field parts). */
export function memberLayoutBody(data: CompanyData, includeCalc: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const key of BASE_KEYS) body[key] = { ...BASE_LAYOUT[key], enum: [...(BASE_LAYOUT[key].enum ?? [])] };
  body.custom_fields = data.member_fields
    .filter((f) => includeCalc || f.kind !== 'calc_formula')
    .map((f) => customFieldLayout(f, 'member'));
  return body;
}
