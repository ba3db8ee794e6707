/**
 * Checks of the bodies that the synchronous writes (users, webhooks) validate by hand, so that a
 * 400 names every problem at once in words a person understands ("email is required").
 */
import { badRequest } from '../http-error.js';

/** The request body as a JSON object; 400 when absent or of another JSON type. */
export function jsonObject(body: unknown): Record<string, unknown> {
  if (body === undefined) throw badRequest('a JSON request body is required');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** Answers 400 with every problem found, when there is any. */
export function refuseIfAny(problems: string[]): void {
  if (problems.length) throw badRequest(problems);
}
