/**
 * Sheet writes of the legacy interface (api-v1-legacy.md 4 operations 9, 10, 15, 16 and behaviour
 * 7-10). Sheet 0 writes members through the v2 member rules (routes/member-input.ts); other sheets
 * through the v2 sheet rules (routes/sheet-write.ts), so both interfaces refuse the same things.
 *
 * - Overwrite: full replacement. On sheet 0, members absent from `data` are deleted with all their
 *   data, new codes are registered, and each sent member is replaced as a whole (a key left out is
 *   cleared). On another sheet, members absent lose their data in that sheet.
 * - Add: on sheet 0 it registers members (a code that exists is NG); on a multiple-record sheet it
 *   appends records after the member's own.
 * - Partial update: only the named members change, and of them only the keys sent.
 * - Partial delete: on sheet 0 the named members are deleted; on another sheet only their data in
 *   that sheet.
 * - The employee number is the key: a write cannot change it, so an update or delete naming a code
 *   no member has is NG (it is not a rename), and so is a code on another sheet.
 * - A concurrent department equal to the primary one is NG.
 *
 * Choices where both documents are silent:
 * - Add on a single-record sheet sets the fields it sends in the member's one record (a member has
 *   no second record to add), like a partial update.
 * - On a multiple-record sheet, the elements of one member are its records in order; a partial
 *   update replaces that member's records with them.
 * - Read-only keys (`department_name`, `sub_department_names`, `last_modified_by`,
 *   `last_modified_at`, and `member_name`/`member_kana` on sheets other than 0) are ignored, so a
 *   read can be sent back. Any other key that is not a field of the sheet is 400, naming it.
 * - A definition value is a string; a checkbox takes its choices joined by "," or as an array;
 *   dates are `YYYY/MM/DD` or `YYYY-MM-DD`; `""` clears.
 * - An empty `data` is 400: an empty overwrite would delete every member.
 */
import { z } from 'zod';
import type { Company } from '../../company.js';
import type { MemberFields } from '../../model.js';
import type { MemberInput } from '../../../spec/schemas.js';
import { buildMember } from '../member-input.js';
import { applyMemberWrite, writeContext } from '../member-write.js';
import { removeMembers } from '../member-removal.js';
import { planSheetWrite } from '../sheet-write.js';
import type { SentMember, SheetWriteMode } from '../sheet-body.js';
import { dashDate, parseLegacyBody, refuse, updateAnswer, type LegacyContext, type LegacyHandler, type LegacyPlan } from './context.js';
import { BASE_SHEET_KEYS, READ_ONLY_KEYS, requireSheet, type LegacySheet } from './sheet-read.js';

type Operation = 'overwrite' | 'add' | 'update';
type Row = Record<string, string | string[] | null>;

const value = z.union([z.string(), z.number(), z.null(), z.array(z.string())], { error: 'must be a string' });
const dataBodySchema = z.strictObject({
  data: z.array(z.record(z.string(), value), { error: 'must be an array of records' }).min(1, 'must hold at least one record'),
});
const deleteBodySchema = z.strictObject({
  data: z.array(z.strictObject({ member_code: z.string({ error: 'must be a string' }).min(1, 'must not be empty') }), { error: 'must be an array of {"member_code": ...}' })
    .min(1, 'must hold at least one member_code'),
});

/** Checks the keys of each record against the sheet: 400 naming every unknown key or bad value. */
function readRows(sheet: LegacySheet, raw: Record<string, unknown>[]): Row[] {
  const definitions = new Set(sheet.fields.map((f) => `definition_${f.id}`));
  const writable = new Set<string>(['member_code', 'member_name', 'member_kana', ...(sheet.id === 0 ? BASE_SHEET_KEYS : [])]);
  const problems: string[] = [];
  const rows = raw.map((record, i) => {
    const row: Row = {};
    for (const [key, sent] of Object.entries(record)) {
      const where = `data[${i}].${key}`;
      if ((READ_ONLY_KEYS as readonly string[]).includes(key)) continue;
      if (!writable.has(key) && !definitions.has(key)) {
        problems.push(/^definition_\d+$/.test(key)
          ? `unknown field "${key}" in data[${i}]: sheet ${sheet.id} has no field ${key.slice(11)} that v1 can write (file and formula parts cannot be)`
          : `unknown field "${key}" in data[${i}]`);
        continue;
      }
      const text = typeof sent === 'number' ? String(sent) : (sent as string | string[] | null);
      if (Array.isArray(text) && key !== 'sub_department_codes' && !definitions.has(key)) {
        problems.push(`${where}: must be a string`);
        continue;
      }
      row[key] = text;
    }
    if (typeof row.member_code !== 'string' || row.member_code === '') problems.push(`data[${i}].member_code: is required`);
    return row;
  });
  if (problems.length) throw refuse(400, problems);
  return rows;
}

const list = (sent: string | string[] | null | undefined): string[] =>
  sent == null ? [] : Array.isArray(sent) ? sent : sent.split(',').map((s) => s.trim()).filter((s) => s !== '');

/** The values of one definition as the v2 rules take them. */
function definitionValues(sheet: LegacySheet, key: string, sent: string | string[] | null): { id: number; values: string[] } {
  const id = Number(key.slice('definition_'.length));
  const field = sheet.fields.find((f) => f.id === id)!;
  let values = sent == null ? [''] : Array.isArray(sent) ? sent : field.kind === 'checkbox' ? list(sent) : [sent];
  if (values.length === 0) values = [''];
  if (field.kind === 'date' || field.kind === 'year_month') values = values.map(dashDate);
  return { id, values };
}

const text = (sent: string | string[] | null | undefined): string | undefined => (sent === undefined ? undefined : sent === null ? '' : String(sent));

/** A sheet 0 row as a v2 member input. */
function memberInput(sheet: LegacySheet, row: Row): MemberInput {
  const input: MemberInput = { code: row.member_code as string };
  const set = <K extends keyof MemberInput>(key: K, v: MemberInput[K] | undefined): void => {
    if (v !== undefined) input[key] = v;
  };
  set('name', text(row.member_name));
  set('name_kana', text(row.member_kana));
  set('mail', text(row.mail));
  set('gender', text(row.gender));
  for (const key of ['entered_date', 'retired_date', 'birthday'] as const) {
    const v = text(row[key]);
    set(key, v === undefined ? undefined : dashDate(v));
  }
  if (row.department_code !== undefined) {
    const code = text(row.department_code);
    input.department = code ? { code } : null;
  }
  if (row.sub_department_codes !== undefined) input.sub_departments = list(row.sub_department_codes).map((code) => ({ code }));
  const custom = Object.keys(row).filter((k) => k.startsWith('definition_')).map((k) => definitionValues(sheet, k, row[k]!));
  if (custom.length) input.custom_fields = custom;
  return input;
}

function planMembers(company: Company, sheet: LegacySheet, rows: Row[], operation: Operation): LegacyPlan {
  const { data } = company;
  const errors: string[] = [];
  const seen = new Set<string>();
  const inputs: MemberInput[] = [];
  for (const row of rows) {
    const code = row.member_code as string;
    if (seen.has(code)) errors.push(`member ${code}: appears more than once in data`);
    else inputs.push(memberInput(sheet, row));
    seen.add(code);
  }
  const deleted = operation === 'overwrite' ? Object.keys(data.members).filter((code) => !seen.has(code)) : [];
  const ctx = writeContext(company, seen, deleted);
  const created: MemberFields[] = [];
  const updated: MemberFields[] = [];
  for (const input of inputs) {
    const existing = data.members[input.code];
    if (operation === 'add' && existing) {
      errors.push(`member ${input.code}: a member with this employee number already exists; add only registers new members`);
      continue;
    }
    if (operation === 'update' && !existing) {
      errors.push(`member ${input.code}: no member has this employee number (it is the key and cannot be changed; add registers new members)`);
      continue;
    }
    const built = buildMember(input, existing, operation === 'update' ? 'partial' : 'full', ctx);
    errors.push(...built.problems);
    const member = built.member;
    if (member.department_code !== null && member.sub_department_codes.includes(member.department_code)) {
      errors.push(`member ${member.code}: concurrent department "${member.department_code}" is the member's primary department; a concurrent department must differ from it`);
    }
    (existing ? updated : created).push(member);
  }
  return {
    errors,
    apply: () => applyMemberWrite(company, created, updated, deleted),
  };
}

/** Rows of another sheet grouped by member, in order: the records of each member. */
function sentMembers(sheet: LegacySheet, rows: Row[]): SentMember[] {
  const byCode = new Map<string, SentMember>();
  for (const row of rows) {
    const code = row.member_code as string;
    const member = byCode.get(code) ?? { code, records: [] };
    byCode.set(code, member);
    member.records.push(Object.keys(row).filter((k) => k.startsWith('definition_')).map((k) => definitionValues(sheet, k, row[k]!)));
  }
  return [...byCode.values()];
}

function planSheet(company: Company, sheet: LegacySheet, rows: Row[], operation: Operation): LegacyPlan {
  const multi = sheet.state!.def.record_type === 1;
  const mode: SheetWriteMode = operation === 'overwrite' ? 'bulk' : operation === 'add' && multi ? 'add' : 'partial';
  const plan = planSheetWrite(company, sheet.id, mode, sentMembers(sheet, rows));
  // The v2 rules speak of member_data; the v1 body calls it data.
  return { errors: plan.errors.map((e) => e.replace('in member_data', 'in data')), apply: plan.apply };
}

function writer(operation: Operation): LegacyHandler {
  return (ctx: LegacyContext) => {
    const sheet = requireSheet(ctx.company, ctx.params.sheet_id);
    const body = parseLegacyBody(dataBodySchema, ctx.body);
    const rows = readRows(sheet, body.data);
    return updateAnswer(ctx, rows.length, () =>
      sheet.id === 0 ? planMembers(ctx.company, sheet, rows, operation) : planSheet(ctx.company, sheet, rows, operation),
    );
  };
}

export const overwriteSheet = writer('overwrite');
export const addSheetData = writer('add');
export const updateSheetData = writer('update');

export const deleteSheetData: LegacyHandler = (ctx) => {
  const sheet = requireSheet(ctx.company, ctx.params.sheet_id);
  const body = parseLegacyBody(deleteBodySchema, ctx.body);
  const codes = body.data.map((d) => d.member_code);
  return updateAnswer(ctx, codes.length, () => {
    const { company } = ctx;
    const { data } = company;
    const errors: string[] = [];
    const seen = new Set<string>();
    for (const code of codes) {
      if (seen.has(code)) errors.push(`member ${code}: appears more than once in data`);
      else if (!data.members[code]) errors.push(`member ${code}: no member has this employee number`);
      seen.add(code);
    }
    const state = sheet.id === 0 ? undefined : data.sheets[String(sheet.id)];
    if (sheet.id !== 0 && !state) errors.push(`sheet ${sheet.id} no longer exists`);
    return {
      errors,
      apply: () => {
        if (!state) {
          removeMembers(company, [...seen]);
          data.members_updated_at = company.now();
          company.emitMemberEvent('member_deleted', [...seen]);
          return;
        }
        for (const code of seen) {
          for (const record of state.records[code] ?? []) for (const file of Object.values(record.files)) company.releaseFile(file);
          delete state.records[code];
        }
        state.updated_at = company.now();
      },
    };
  });
};
