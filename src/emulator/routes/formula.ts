/**
 * Formula parts of sheets (api-v2.md 2 "Custom field parts", 4.4 Sheets 11): recalculated after
 * every registration, update or added record, and stored in the record like any value. The
 * arithmetic is the one evaluator of the emulator (member-formula.ts: numbers, `{id}`, `+ - * /`,
 * unary minus, parentheses, no `eval`).
 *
 * A formula refers to number box fields of the same record. A reference to anything else (an
 * unknown id, a text field, another formula), a referenced number box without a value, a division
 * by zero or a formula that does not parse gives an empty value: the service recalculates on its
 * own, so a formula that cannot be computed must not fail the write that triggered it.
 */
import type { FieldDef, SheetRecord } from '../model.js';
import { evaluateFormula } from './member-formula.js';

/** The value of `formula` for a record; "" when it cannot be computed. */
export function sheetFormulaValue(formula: string, fields: readonly FieldDef[], record: SheetRecord): string {
  const numbers: Record<string, string[]> = {};
  for (const field of fields) {
    if (field.kind === 'number_box') numbers[String(field.id)] = record.values[String(field.id)] ?? [];
  }
  return evaluateFormula(formula, numbers) ?? '';
}

/** Recalculates every formula part of a record (api-v2.md 4.4 Sheets 11). */
export function recalculate(fields: readonly FieldDef[], record: SheetRecord): void {
  for (const field of fields) {
    if (field.kind !== 'calc_formula') continue;
    const value = field.formula === undefined ? '' : sheetFormulaValue(field.formula, fields, record);
    record.values[String(field.id)] = value === '' ? [] : [value];
  }
}
