/**
 * Masters, the choice lists of pulldown, radio and checkbox parts (api-v2.md 2 Masters, 4.2 and
 * 4.4 Masters; wire-format.md): the list over member fields and every sheet, one field's masters,
 * and the update task. Stored values (member custom fields, sheet records) hold a master's name, so
 * renaming a master renames the values that use it.
 */
import { peekEntries } from '../../lazy-record.js';
import { createTask, intParam, parseBody, requireNonEmpty, type RouteHandler, type TaskPlan } from '../context.js';
import { badRequest, notFound } from '../../http-error.js';
import type { Company } from '../../company.js';
import type { CompanyData, EnumOption, FieldDef, FieldKind, SheetState } from '../../model.js';
import { enumOptionsBodySchema } from '../../../spec/schemas.js';

/** The parts that have masters (4.4 Masters 1). */
const MASTER_KINDS: readonly FieldKind[] = ['pulldown', 'radio', 'checkbox'];

/**
 * `sheet_name` of member fields, which belong to no sheet: the label of the member's base
 * information screen. The service's own value is not shown.
 */
export const MEMBER_FIELDS_SHEET_NAME = '基本情報';

/** A field and where it lives: a sheet, or the member's base information (sheet null). */
interface Located {
  field: FieldDef;
  sheet: SheetState | null;
}

function everyField(data: CompanyData): Located[] {
  const found: Located[] = data.member_fields.map((field) => ({ field, sheet: null }));
  for (const sheet of Object.values(data.sheets).sort((a, b) => a.def.id - b.def.id)) {
    for (const field of sheet.def.fields) found.push({ field, sheet });
  }
  return found;
}

/** Fields under data integration are excluded from get and update (4.4 Masters 1). */
const isMasterField = (field: FieldDef): boolean => MASTER_KINDS.includes(field.kind) && !field.integrated;

/**
 * The field of `/enum_options/{custom_field_id}`: 404 for an unknown id; 400 for a field that has no
 * masters the API may touch, like a file part asked of the attachment operations.
 */
function findMasterField(data: CompanyData, id: number): Located {
  const located = everyField(data).find((l) => l.field.id === id);
  if (!located) throw notFound(`custom field ${id}`);
  const { field } = located;
  if (!MASTER_KINDS.includes(field.kind)) {
    throw badRequest(`custom field ${id} ("${field.name}") is a ${field.kind} part; only pulldown, radio and checkbox parts have masters`);
  }
  if (field.integrated) {
    throw badRequest(`custom field ${id} ("${field.name}") is under data integration; its masters cannot be read or updated through API v2`);
  }
  return located;
}

function view({ field, sheet }: Located): Record<string, unknown> {
  return {
    sheet_name: sheet ? sheet.def.name : MEMBER_FIELDS_SHEET_NAME,
    // The single response types the field id as a string (api-v2.md 2 Masters).
    id: String(field.id),
    name: field.name,
    enum_option_data: (field.options ?? []).map(({ id, name }) => ({ id, name })),
  };
}

export const listEnumOptions: RouteHandler = (ctx) => {
  const fields = everyField(ctx.company.data).filter((l) => isMasterField(l.field));
  return { body: { custom_field_data: fields.map(view) } };
};

export const getEnumOption: RouteHandler = (ctx) => ({
  body: view(findMasterField(ctx.company.data, intParam(ctx, 'custom_field_id'))),
});

interface WantedOption {
  id?: number;
  name: string;
}

/** Update (4.4 Masters 2): `enum_option_data` must hold at least one element. */
export const updateEnumOptions: RouteHandler = (ctx) => {
  const fieldId = intParam(ctx, 'custom_field_id');
  findMasterField(ctx.company.data, fieldId);
  const body = parseBody(enumOptionsBodySchema, ctx.body);
  requireNonEmpty(body.enum_option_data, 'enum_option_data');
  const wanted: WantedOption[] = body.enum_option_data.map((o) => (o.id === undefined ? { name: o.name } : { id: o.id, name: o.name }));
  return createTask(ctx, wanted.length, () => planMasters(ctx.company, fieldId, wanted));
};

/** Member codes using each value of a field: members for member fields, sheet records otherwise. */
function membersByValue({ field, sheet }: Located, data: CompanyData): Map<string, Set<string>> {
  const key = String(field.id);
  const users = new Map<string, Set<string>>();
  const add = (value: string, code: string): void => {
    const codes = users.get(value) ?? new Set<string>();
    codes.add(code);
    users.set(value, codes);
  };
  if (!sheet) {
    for (const [, member] of peekEntries(data.members)) for (const value of member.custom_fields[key] ?? []) add(value, member.code);
  } else {
    for (const [code, records] of peekEntries(sheet.records)) {
      for (const record of records) for (const value of record.values[key] ?? []) add(value, code);
    }
  }
  return users;
}

function checkWanted(current: EnumOption[], wanted: WantedOption[]): string[] {
  const errors: string[] = [];
  const known = new Set(current.map((o) => o.id));
  const ids = new Set<number>();
  const names = new Set<string>();
  const reported = new Set<string>();
  wanted.forEach((item, index) => {
    const where = item.id === undefined ? `enum_option_data ${index} (a new master)` : `master ${item.id}`;
    if (!item.name.trim()) errors.push(`${where}: name must not be empty`);
    if (item.id !== undefined) {
      if (!known.has(item.id)) errors.push(`master ${item.id}: the field has no master with this id (omit id to add a master)`);
      else if (ids.has(item.id)) errors.push(`master ${item.id}: appears more than once in enum_option_data`);
      ids.add(item.id);
    }
    if (names.has(item.name) && !reported.has(item.name)) {
      errors.push(`master name "${item.name}" appears more than once; names must be unique within a field`);
      reported.add(item.name);
    }
    names.add(item.name);
  });
  return errors;
}

function planMasters(company: Company, fieldId: number, wanted: WantedOption[]): TaskPlan {
  const { data } = company;
  const located = everyField(data).find((l) => l.field.id === fieldId && isMasterField(l.field));
  if (!located) return { errors: [`custom field ${fieldId} no longer has masters`], apply: () => undefined };
  const { field } = located;
  const current = field.options ?? [];
  const errors = checkWanted(current, wanted);

  // Masters absent from the body are deleted, only when no member uses them (4.4 Masters 2).
  const kept = new Set(wanted.flatMap((w) => (w.id === undefined ? [] : [w.id])));
  const usage = membersByValue(located, data);
  for (const option of current) {
    if (kept.has(option.id)) continue;
    const count = usage.get(option.name)?.size ?? 0;
    if (count) {
      errors.push(`master ${option.id} ("${option.name}"): would be deleted (absent from enum_option_data) but has a member count of ${count}; only masters with a member count of 0 can be deleted`);
    }
  }

  const renames = new Map<string, string>();
  for (const item of wanted) {
    const before = current.find((o) => o.id === item.id);
    if (before && before.name !== item.name) renames.set(before.name, item.name);
  }
  return {
    errors,
    apply: () => {
      // Order follows the array; a master without id is added with a new id (4.4 Masters 2).
      field.options = wanted.map((item) => ({ id: item.id ?? data.next_ids.enum_option++, name: item.name }));
      if (renames.size) renameValues(company, located, renames);
    },
  };
}

/**
 * Renames stored values. Member fields are base information: the members changed get a
 * `member_updated` event (api-v2.md 6: master update is a source of events).
 */
function renameValues(company: Company, { field, sheet }: Located, renames: Map<string, string>): void {
  const key = String(field.id);
  const now = company.now();
  const rename = (values: string[] | undefined): string[] | null => {
    if (!values?.some((v) => renames.has(v))) return null;
    return values.map((v) => renames.get(v) ?? v);
  };
  if (sheet) {
    let touched = false;
    // Read first, taken (and kept) only where a value changes: lazy-record.ts.
    for (const [code, peeked] of peekEntries(sheet.records)) {
      if (!peeked.some((record) => rename(record.values[key]))) continue;
      for (const record of sheet.records[code]!) {
        const renamed = rename(record.values[key]);
        if (!renamed) continue;
        record.values[key] = renamed;
        touched = true;
      }
    }
    if (touched) sheet.updated_at = now;
    return;
  }
  const changed: string[] = [];
  for (const [code, peeked] of peekEntries(company.data.members)) {
    if (!rename(peeked.custom_fields[key])) continue;
    const member = company.data.members[code]!;
    const renamed = rename(member.custom_fields[key]);
    if (!renamed) continue;
    member.custom_fields[key] = renamed;
    member.updated_at = now;
    changed.push(member.code);
  }
  if (!changed.length) return;
  company.data.members_updated_at = now;
  company.emitMemberEvent('member_updated', changed);
}
