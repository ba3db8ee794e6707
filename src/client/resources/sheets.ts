/** Sheets (api-v2.md 4.4 Sheets 1-5, 10, 11; wire-format.md, Sheets). */
import { sheetAnswerSchema, sheetLayoutSchema, sheetLayoutsAnswerSchema, type SheetAnswer, type SheetLayout } from '../../spec/schemas.js';
import type { Transport } from '../transport.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

/**
 * One member's values in a sheet, as sent: `custom_fields` for a single-record sheet, `records`
 * (each with its `custom_fields`) for a multiple-record one. Each value is a list of strings.
 */
export type SheetMemberInput = {
  /** The member's code (either key is taken). */
  member_code?: string;
  /** The member's code (either key is taken). */
  code?: string;
  /** A multiple-record sheet: the member's records, each with its values. */
  records?: {
    /** The record's values. */
    custom_fields: SheetValue[];
  }[];
  /** A single-record sheet: the member's values. */
  custom_fields?: SheetValue[];
};

/** One field's values in a sheet. */
export interface SheetValue {
  /** The field's id (from the sheet's layout). */
  id: number;
  /** Its values, as strings (dates `YYYY-MM-DD`). */
  values: string[];
}

/** Sheets: their layouts, and members' values in them. Reach it as `client.sheets`. */
export class Sheets {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** Every sheet's layout: its fields and their types; `getCalcType: true` includes the formula fields (default false). */
  async layouts(options: { getCalcType?: boolean; signal?: AbortSignal } = {}): Promise<SheetLayout[]> {
    const answer = await this.t.call('sheets.layouts', { query: { get_calc_type: options.getCalcType }, signal: options.signal }, sheetLayoutsAnswerSchema);
    return answer.sheets;
  }

  /** One sheet's layout. */
  layout(id: number, options: { getCalcType?: boolean } = {}): Promise<SheetLayout> {
    return this.t.call('sheets.layout', { params: { sheet_id: id }, query: { get_calc_type: options.getCalcType } }, sheetLayoutSchema);
  }

  /** One sheet with every member's values. */
  get(id: number, options: { getCalcType?: boolean } = {}): Promise<SheetAnswer> {
    return this.t.call('sheets.get', { params: { sheet_id: id }, query: { get_calc_type: options.getCalcType } }, sheetAnswerSchema);
  }

  /** Replaces the values of the members given: values absent from a member are cleared. */
  bulkUpdate(id: number, members: SheetMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'sheets.bulkUpdate', { params: { sheet_id: id }, body: { member_data: members }, ...options });
  }

  /** Changes only the values sent. */
  partialUpdate(id: number, members: SheetMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'sheets.partialUpdate', { params: { sheet_id: id }, body: { member_data: members }, ...options });
  }

  /** Adds records to members in a multiple-record sheet. */
  addRecords(id: number, members: SheetMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'sheets.addRecords', { params: { sheet_id: id }, body: { member_data: members }, ...options });
  }
}
