/** Placeholder until its owner lands it. */
import type { RouteHandler } from '../context.js';
import { HttpError } from '../../http-error.js';
const pending: RouteHandler = () => { throw new HttpError(501, 'pending'); };
export const listWebhooks: RouteHandler = pending;
export const registerWebhook: RouteHandler = pending;
export const updateWebhook: RouteHandler = pending;
export const deleteWebhook: RouteHandler = pending;
