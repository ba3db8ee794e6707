/**
 * The values a sheet write may put into one field, by kind (api-v2.md 2 "Custom field parts").
 * `[]` and `[""]` clear a field (4.4 Sheets 3, 4: "empty string clears a value"); a cleared field
 * reads back as `values: []`.
 */
import type { Company } from '../company.js';
import type { FieldDef } from '../model.js';
import { isValidDate } from '../../spec/time.js';
import { customFieldLayout } from './member-layout.js';

export type CheckedValues = { ok: true; values: string[] } | { ok: false; problem: string };

/** A number box takes a plain decimal number: optional minus, digits, optional fraction. */
const NUMBER = /^-?\d+(?:\.\d+)?$/;


const fail = (problem: string): CheckedValues => ({ ok: false, problem });

/**
 * Checks the values sent for a field that a sheet write may set (not file or formula parts, which
 * the caller handles). Problems are phrased to follow `custom field 12 ("Name"): `.
 */
export function checkValues(company: Company, field: FieldDef, sent: string[]): CheckedValues {
  if (sent.every((v) => v === '')) return { ok: true, values: [] };
  if (sent.some((v) => v === '')) return fail('an empty string clears the field and cannot stand among other values');
  if (field.kind !== 'checkbox' && sent.length > 1) return fail(`takes one value, got ${sent.length}`);
  // The layout announces max_length for the string kinds only; the write enforces what it announces.
  const max = customFieldLayout(field).max_length;
  if (max !== null) {
    const long = sent.find((v) => [...v].length > max);
    if (long !== undefined) return fail(`"${long}" is ${[...long].length} characters, over the maximum length of ${max}`);
  }
  const value = sent[0]!;
  switch (field.kind) {
    case 'number_box':
      return NUMBER.test(value) ? { ok: true, values: sent } : fail(`"${value}" is not a number`);
    case 'date':
    case 'year_month':
      // Year-month parts are also updated as YYYY-MM-DD (api-v2.md 2).
      return isValidDate(value) ? { ok: true, values: sent } : fail(`"${value}" is not a date YYYY-MM-DD`);
    case 'pulldown':
    case 'radio':
    case 'checkbox':
      return checkChoices(field, sent);
    case 'face_image':
      // The face photo part names the member whose photo is shown (api-v2.md 2).
      return company.data.members[value] ? { ok: true, values: sent } : fail(`"${value}" is not the employee number of a member`);
    default:
      return { ok: true, values: sent };
  }
}

/** Pulldown and radio take one option name, a checkbox any number of distinct ones (4.4 Masters). */
function checkChoices(field: FieldDef, sent: string[]): CheckedValues {
  const names = new Set((field.options ?? []).map((o) => o.name));
  const unknown = sent.find((v) => !names.has(v));
  if (unknown !== undefined) return fail(`"${unknown}" is not an option of this field`);
  if (new Set(sent).size !== sent.length) return fail('names an option more than once');
  return { ok: true, values: sent };
}
