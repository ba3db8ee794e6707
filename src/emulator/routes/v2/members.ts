/** Placeholder until its owner lands it. */
import type { RouteHandler } from '../context.js';
import { HttpError } from '../../http-error.js';
const pending: RouteHandler = () => { throw new HttpError(501, 'pending'); };
export const memberLayout: RouteHandler = pending;
export const listMembers: RouteHandler = pending;
export const registerMembers: RouteHandler = pending;
export const bulkUpdateMembers: RouteHandler = pending;
export const partialUpdateMembers: RouteHandler = pending;
export const replaceAllMembers: RouteHandler = pending;
export const deleteMembers: RouteHandler = pending;
