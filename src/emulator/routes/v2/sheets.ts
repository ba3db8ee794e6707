/** Placeholder until its owner lands it. */
import type { RouteHandler } from '../context.js';
import { HttpError } from '../../http-error.js';
const pending: RouteHandler = () => { throw new HttpError(501, 'pending'); };
export const sheetLayouts: RouteHandler = pending;
export const sheetLayout: RouteHandler = pending;
export const getSheet: RouteHandler = pending;
export const bulkUpdateSheet: RouteHandler = pending;
export const partialUpdateSheet: RouteHandler = pending;
export const addSheetRecords: RouteHandler = pending;
