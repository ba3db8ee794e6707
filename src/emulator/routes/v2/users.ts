/** Placeholder until its owner lands it. */
import type { RouteHandler } from '../context.js';
import { HttpError } from '../../http-error.js';
const pending: RouteHandler = () => { throw new HttpError(501, 'pending'); };
export const listUsers: RouteHandler = pending;
export const getUser: RouteHandler = pending;
export const registerUser: RouteHandler = pending;
export const updateUser: RouteHandler = pending;
export const deleteUser: RouteHandler = pending;
