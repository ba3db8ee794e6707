/**
 * The read shapes of sheets (wire-format.md, Sheets): layouts and sheet information.
 *
 * Formula parts are shown only with `get_calc_type=true` (api-v2.md 2 "Custom field parts", 4.2).
 * The sheet read takes the same flag, so that a sheet read and a layout read with the same flag
 * always show the same fields, and a sheet read can be sent back as an update body without formula
 * parts (which cannot be updated directly).
 *
 * Layout `type` per kind comes from member-layout.ts: text parts, links, file parts and the face
 * photo part `string`, number boxes `number`, choice parts `enum` (option names in `enum`), date
 * and year-month parts `date`, formula parts `calc`; the precise kind is `type_detail`.
 */
import type { FieldDef, SheetRecord, SheetState } from '../model.js';
import type { Company } from '../company.js';
import { customFieldLayout } from './member-layout.js';
import { answerValues } from './member-view.js';
import { peekEntry, sortedCodes } from '../lazy-record.js';
import { JsonParts } from '../send.js';

/** The fields a read shows: formula parts only when asked for. */
export function visibleFields(sheet: SheetState, withFormulas: boolean): FieldDef[] {
  return sheet.def.fields.filter((f) => withFormulas || f.kind !== 'calc_formula');
}

export function layoutView(sheet: SheetState, withFormulas: boolean): unknown {
  const { def } = sheet;
  return {
    id: def.id,
    name: def.name,
    record_type: def.record_type,
    // The element shape is the member layout's (member-layout.ts): one place decides `type`,
    // `max_length` and `enum` for a custom field, wherever it is shown.
    custom_fields: visibleFields(sheet, withFormulas).map((f) => customFieldLayout(f, 'sheet')),
  };
}

/** The values of one field of a record; a file part shows its file name (empty without a file). */
export function fieldValues(field: FieldDef, record: SheetRecord | undefined): string[] {
  if (!record) return [];
  if (field.kind === 'attach_file') {
    const file = record.files[String(field.id)];
    return file ? [file.file_name] : [];
  }
  return [...(record.values[String(field.id)] ?? [])];
}

/** An empty field answers `[""]`, as on members (member-view.ts `answerValues`). */
function recordView(fields: FieldDef[], record: SheetRecord | undefined): unknown {
  return { custom_fields: fields.map((f) => ({ id: f.id, name: f.name, values: answerValues(fieldValues(f, record)) })) };
}

/**
 * Every member of the company, by code. A single-record sheet shows one record per member, with
 * `[""]` in every field where nothing is stored (wire-format.md, "Real-client facts"); a
 * multiple-record sheet shows the member's records in stored order, none when the member has none.
 */
export function sheetView(company: Company, sheet: SheetState, withFormulas: boolean): JsonParts {
  const fields = visibleFields(sheet, withFormulas);
  const single = sheet.def.record_type === 0;
  const member_data = (function* () {
    for (const code of sortedCodes(company.data.members)) {
      const stored = peekEntry(sheet.records, code) ?? [];
      const records = single ? [recordView(fields, stored[0])] : stored.map((r) => recordView(fields, r));
      yield { code, records };
    }
  })();
  return JsonParts.withList({ id: sheet.def.id, name: sheet.def.name, record_type: sheet.def.record_type, updated_at: sheet.updated_at }, 'member_data', member_data);
}
