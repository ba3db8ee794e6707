/** Sheets (api-v2.md 4.4 Sheets 1-5, 10, 11; wire-format.md, Sheets). */
import { z } from 'zod';
import { sheetAnswerSchema, sheetLayoutSchema, sheetLayoutsAnswerSchema, type SheetLayout } from '../../spec/schemas.js';
import type { Transport } from '../transport.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

export type SheetMemberInput = {
  member_code?: string;
  code?: string;
  records?: { custom_fields: { id: number; values: string[] }[] }[];
  custom_fields?: { id: number; values: string[] }[];
};

export class Sheets {
  constructor(private readonly t: Transport) {}

  async layouts(options: { getCalcType?: boolean } = {}): Promise<SheetLayout[]> {
    const answer = await this.t.call('sheets.layouts', { query: { get_calc_type: options.getCalcType } }, sheetLayoutsAnswerSchema);
    return answer.sheets;
  }

  layout(id: number, options: { getCalcType?: boolean } = {}): Promise<SheetLayout> {
    return this.t.call('sheets.layout', { params: { sheet_id: id }, query: { get_calc_type: options.getCalcType } }, sheetLayoutSchema);
  }

  get(id: number, options: { getCalcType?: boolean } = {}): Promise<z.infer<typeof sheetAnswerSchema>> {
    return this.t.call('sheets.get', { params: { sheet_id: id }, query: { get_calc_type: options.getCalcType } }, sheetAnswerSchema);
  }

  bulkUpdate(id: number, members: SheetMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'sheets.bulkUpdate', { params: { sheet_id: id }, body: { member_data: members }, ...options });
  }

  partialUpdate(id: number, members: SheetMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'sheets.partialUpdate', { params: { sheet_id: id }, body: { member_data: members }, ...options });
  }

  /** Multiple-record sheets only (4.4 Sheets 5). */
  addRecords(id: number, members: SheetMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'sheets.addRecords', { params: { sheet_id: id }, body: { member_data: members }, ...options });
  }
}
