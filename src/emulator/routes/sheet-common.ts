/** Look-ups shared by the sheet and attachment operations. */
import type { FieldDef, SheetState } from '../model.js';
import type { Company } from '../company.js';
import { badRequest, notFound } from '../http-error.js';

export function findSheet(company: Company, sheetId: number): SheetState {
  const sheet = company.data.sheets[String(sheetId)];
  if (!sheet) throw notFound(`sheet ${sheetId}`);
  return sheet;
}

/** A file part of a sheet (wire-format.md: `type_detail: "attach_file"`). */
export function findFileField(sheet: SheetState, fieldId: number): FieldDef {
  const field = sheet.def.fields.find((f) => f.id === fieldId);
  if (!field) throw notFound(`custom field ${fieldId} of sheet ${sheet.def.id}`);
  if (field.kind !== 'attach_file') {
    throw badRequest(`custom field ${fieldId} ("${field.name}") of sheet ${sheet.def.id} is not a file part`);
  }
  return field;
}

export const isMultiRecord = (sheet: SheetState): boolean => sheet.def.record_type === 1;
