/**
 * The values a write may put into one custom field, by kind (api-v2.md 2 "Custom field parts"):
 * one rule set for member writes, sheet writes and seeds. `[]` and `[""]` clear a field (4.4
 * Members 3, Sheets 3, 4: "empty string clears a value"); a cleared field reads back as `[]`.
 * Formula and file parts are the caller's: each write refuses or routes them in its own words.
 */
import type { FieldDef } from '../model.js';
import { isValidDate } from '../../spec/time.js';
import { customFieldLayout } from './member-layout.js';

export type CheckedValues = { ok: true; values: string[] } | { ok: false; problem: string };

/** A number box takes a plain decimal number: optional minus, digits, optional fraction. */
const NUMBER = /^-?\d+(?:\.\d+)?$/;

const fail = (problem: string): CheckedValues => ({ ok: false, problem });
const characters = (s: string): number => [...s].length;

/**
 * Checks the values sent for one field. `isMember` tells whether an employee number names a member
 * (as the write leaves the company), for face photo parts. Problems are phrased to follow
 * `custom field 12 ("Name") `.
 */
export function checkFieldValues(field: FieldDef, sent: string[], isMember: (code: string) => boolean): CheckedValues {
  if (sent.every((v) => v === '')) return { ok: true, values: [] };
  if (sent.some((v) => v === '')) return fail('cannot take "" among other values (an empty string clears the field)');
  if (field.kind !== 'checkbox' && sent.length > 1) return fail(`takes one value, got ${sent.length}`);
  // The layout announces max_length for the string kinds only; the write enforces what it announces.
  const max = customFieldLayout(field, 'sheet').max_length;
  if (max !== null) {
    const long = sent.find((v) => characters(v) > max);
    if (long !== undefined) return fail(`is ${characters(long)} characters, over the maximum length of ${max}`);
  }
  const value = sent[0]!;
  switch (field.kind) {
    case 'number_box':
      return NUMBER.test(value) ? { ok: true, values: sent } : fail(`must be a number, got "${value}"`);
    case 'date':
    case 'year_month':
      // Date and year-month parts are updated as YYYY-MM-DD (api-v2.md 2).
      return isValidDate(value) ? { ok: true, values: sent } : fail(`must be a date YYYY-MM-DD, got "${value}"`);
    case 'pulldown':
    case 'radio':
    case 'checkbox':
      return checkChoices(field, sent);
    case 'face_image':
      // The face photo part holds the employee number of the member whose photo is shown.
      return isMember(value) ? { ok: true, values: sent } : fail(`must name an existing member, got "${value}"`);
    default:
      return { ok: true, values: sent };
  }
}

/** Pulldown and radio take one option name, a checkbox any number of distinct ones (4.4 Masters). */
function checkChoices(field: FieldDef, sent: string[]): CheckedValues {
  const names = (field.options ?? []).map((o) => o.name);
  const unknown = sent.filter((v) => !names.includes(v));
  if (unknown.length) return fail(`has no choice ${unknown.map((v) => `"${v}"`).join(', ')}; choices: ${names.join(', ') || '(none)'}`);
  if (new Set(sent).size !== sent.length) return fail('names the same choice more than once');
  return { ok: true, values: sent };
}
