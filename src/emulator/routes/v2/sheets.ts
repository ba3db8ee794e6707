/**
 * Sheets (api-v2.md 4.2, 4.4 Sheets 1 to 5, 10, 11; wire-format.md, Sheets): layouts, the sheet
 * read, bulk update, partial update and add records. The rules of the writes are in
 * ../sheet-write.ts, the read shapes in ../sheet-view.ts.
 */
import { boolQuery, createTask, intParam, type RouteHandler } from '../context.js';
import { findSheet } from '../sheet-common.js';
import { layoutView, sheetView } from '../sheet-view.js';
import { readSheetBody, type SheetWriteMode } from '../sheet-body.js';
import { planSheetWrite } from '../sheet-write.js';
import { badRequest } from '../../http-error.js';

export const sheetLayouts: RouteHandler = (ctx) => {
  const withFormulas = boolQuery(ctx, 'get_calc_type');
  const sheets = Object.values(ctx.company.data.sheets)
    .sort((a, b) => a.def.id - b.def.id)
    .map((sheet) => layoutView(sheet, withFormulas));
  return { body: { sheets } };
};

export const sheetLayout: RouteHandler = (ctx) => {
  const sheet = findSheet(ctx.company, intParam(ctx, 'sheet_id'));
  return { body: layoutView(sheet, boolQuery(ctx, 'get_calc_type')) };
};

/** Takes `get_calc_type` like the layout reads, so both show the same fields (sheet-view.ts). */
export const getSheet: RouteHandler = (ctx) => {
  const sheet = findSheet(ctx.company, intParam(ctx, 'sheet_id'));
  return { body: sheetView(ctx.company, sheet, boolQuery(ctx, 'get_calc_type')) };
};

function sheetWriter(mode: SheetWriteMode): RouteHandler {
  return (ctx) => {
    const sheet = findSheet(ctx.company, intParam(ctx, 'sheet_id'));
    // Add records targets multiple-record sheets only (4.4 Sheets 5): the sheet, not a member,
    // is wrong, so the request is refused at once.
    if (mode === 'add' && sheet.def.record_type !== 1) {
      throw badRequest(`sheet ${sheet.def.id} is a single-record sheet; records can only be added to multiple-record sheets`);
    }
    const sent = readSheetBody(sheet, ctx.body, mode);
    const sheetId = sheet.def.id;
    return createTask(ctx, sent.length, () => planSheetWrite(ctx.company, sheetId, mode, sent));
  };
}

export const bulkUpdateSheet = sheetWriter('bulk');
export const partialUpdateSheet = sheetWriter('partial');
export const addSheetRecords = sheetWriter('add');
