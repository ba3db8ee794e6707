/** Placeholder until its owner lands it. */
import type { RouteHandler } from '../context.js';
import { HttpError } from '../../http-error.js';
const pending: RouteHandler = () => { throw new HttpError(501, 'pending'); };
export const listDepartments: RouteHandler = pending;
export const bulkUpdateDepartments: RouteHandler = pending;
