/**
 * The body of the sheet writes (bulk update, partial update, add records), checked for shape and
 * normalised before the task is created. Shape problems answer 400 at once; rule violations are
 * left to the task (sheet-write.ts).
 *
 * A member element names its member by `member_code` (api-v2.md 2, Sheet information) or `code`
 * (wire-format.md, Sheets: the GET shape); either is accepted, both only when equal. Its fields
 * come as `records: [{custom_fields: [{id, values}]}]`, or, on a single-record sheet, as
 * `custom_fields` directly on the element (the one record of the member).
 */
import { parseBody, requireNonEmpty } from './context.js';
import { badRequest } from '../http-error.js';
import type { SheetState } from '../model.js';
import { sheetBodySchema } from '../../spec/schemas.js';

export interface SentField {
  id: number;
  values: string[];
}

export interface SentMember {
  code: string;
  /** The records as sent, each a list of fields, in array order. */
  records: SentField[][];
}

export type SheetWriteMode = 'bulk' | 'partial' | 'add';

export function readSheetBody(sheet: SheetState, body: unknown, mode: SheetWriteMode): SentMember[] {
  const parsed = parseBody(sheetBodySchema, body);
  requireNonEmpty(parsed.member_data, 'member_data');
  const multi = sheet.def.record_type === 1;
  const problems: string[] = [];
  const members: SentMember[] = [];
  parsed.member_data.forEach((element, i) => {
    const where = `member_data.${i}`;
    const { code, member_code: memberCode, records, custom_fields: fields } = element;
    if (code !== undefined && memberCode !== undefined && code !== memberCode) {
      problems.push(`${where}: member_code "${memberCode}" and code "${code}" differ`);
      return;
    }
    const chosen = memberCode ?? code;
    if (chosen === undefined || chosen === '') {
      problems.push(`${where}: member_code is required`);
      return;
    }
    if (records !== undefined && fields !== undefined) {
      problems.push(`${where}: send either records or custom_fields, not both`);
      return;
    }
    if (fields !== undefined && multi) {
      problems.push(`${where}: sheet ${sheet.def.id} is a multiple-record sheet; send the member's fields as records`);
      return;
    }
    if (records === undefined && fields === undefined) {
      problems.push(`${where}: records is required`);
      return;
    }
    const sent = fields !== undefined ? [fields] : records!.map((r) => r.custom_fields);
    if (mode === 'add' && sent.length === 0) {
      problems.push(`${where}: records must hold at least one record to add`);
      return;
    }
    members.push({ code: chosen, records: sent.map((list) => list.map((f) => ({ id: f.id, values: f.values }))) });
  });
  if (problems.length) throw badRequest(problems);
  return members;
}
