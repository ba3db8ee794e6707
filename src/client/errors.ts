/**
 * The client's errors, one class per failure kind, each with a stable `code` that the CLI maps to
 * exit codes and messages. Messages and the service's `errors` are redacted in the constructor,
 * so no caller can forget it (octokit's request-error does the same).
 */
import { redact } from '../util/redact.js';

/** The stable code of each kind of failure; the CLI maps them to exit codes and messages. */
export type WdsErrorCode =
  | 'INVALID_OPTION' | 'BAD_REQUEST' | 'AUTHENTICATION' | 'FORBIDDEN' | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED' | 'PAYLOAD_TOO_LARGE' | 'RATE_LIMITED' | 'SERVER_ERROR' | 'MAINTENANCE'
  | 'NETWORK' | 'TIMEOUT' | 'TASK_FAILED' | 'UPDATE_OUTCOME_UNKNOWN' | 'INVALID_RESPONSE' | 'REQUEST_BODY'
  | 'WRONG_BASE_URL' | 'REDIRECT';

/** What an error knows of the request it comes from. */
export interface ErrorDetails {
  /** The request's HTTP method. */
  method?: string;
  /** The request's path under `/api/v2.0`. */
  path?: string;
  /** The answer's HTTP status. */
  status?: number;
  /** The service's `errors` array. */
  errors?: string[];
  /** The error underneath (kept as its name and redacted message only). */
  cause?: unknown;
}

/** Every error of the client. Its message and `errors` never hold a secret. */
export class WdsError extends Error {
  /** What kind of failure it is; stable across versions. */
  readonly code: WdsErrorCode;
  /** The request's HTTP method, when a request failed. */
  readonly method?: string;
  /** The request's path under `/api/v2.0`, when a request failed. */
  readonly path?: string;
  /** The answer's HTTP status, when there was an answer. */
  readonly status?: number;
  /** What the service said, from its `errors` array (empty when it said nothing). */
  readonly errors: string[];

  constructor(code: WdsErrorCode, message: string, details: ErrorDetails = {}) {
    super(redact(message), details.cause === undefined ? undefined : { cause: scrubCause(details.cause) });
    this.name = 'WdsError';
    this.code = code;
    this.method = details.method;
    this.path = details.path;
    this.status = details.status;
    this.errors = (details.errors ?? []).map(redact);
  }
}

/** A cause is kept only as its name and redacted message: a raw error may carry request headers. */
function scrubCause(cause: unknown): unknown {
  if (cause instanceof Error) {
    const copy = new Error(redact(cause.message));
    copy.name = cause.name;
    (copy as Error & { code?: unknown }).code = (cause as Error & { code?: unknown }).code;
    return copy;
  }
  return typeof cause === 'string' ? redact(cause) : undefined;
}

function describe(details: ErrorDetails, summary: string): string {
  const where = details.method && details.path ? `${details.method} ${details.path}: ` : '';
  const said = details.errors?.length ? ` (${details.errors.join('; ')})` : '';
  return `${where}${summary}${said}`;
}

/** A client option is invalid; the message names it and the value given (never a secret). */
export class OptionsError extends WdsError {
  constructor(message: string) {
    super('INVALID_OPTION', message);
    this.name = 'OptionsError';
  }
}

/** An answer of the service that is not a success. */
export class ApiError extends WdsError {
  constructor(code: WdsErrorCode, summary: string, details: ErrorDetails) {
    super(code, describe(details, summary), details);
    this.name = 'ApiError';
  }
}

/** 400: the service refused the request's parameters or body; `errors` says why. */
export class BadRequestError extends ApiError {
  constructor(details: ErrorDetails) {
    super('BAD_REQUEST', `the service refused the request's parameters (${details.status ?? 400})`, details);
    this.name = 'BadRequestError';
  }
}

/** 401 after a fresh token: the consumer key or secret is wrong. */
export class AuthenticationError extends ApiError {
  constructor(details: ErrorDetails) {
    super('AUTHENTICATION', 'authentication failed (401): check the consumer key and consumer secret', details);
    this.name = 'AuthenticationError';
  }
}

/** 403: the API is not switched on for this operation in the service's administrator screen. */
export class ForbiddenError extends ApiError {
  constructor(details: ErrorDetails) {
    super('FORBIDDEN', 'API v2 cannot be used for this operation (403): switch the operation on in the administrator screen', details);
    this.name = 'ForbiddenError';
  }
}

/** 404: no such id (sheet, field, user, task...). */
export class NotFoundError extends ApiError {
  constructor(details: ErrorDetails) {
    super('NOT_FOUND', 'no such id (404)', details);
    this.name = 'NotFoundError';
  }
}

/**
 * 404 from something that is not the API: the answer lacks the service's JSON error, or came for a
 * path the API always has (the token's, a list's). The base URL points at the wrong place.
 */
export class WrongBaseUrlError extends ApiError {
  /** The base URL the client was given. */
  readonly baseUrl: string;
  constructor(baseUrl: string, why: string, details: ErrorDetails) {
    super('WRONG_BASE_URL', `the base URL ${baseUrl} looks wrong: ${why}; the base URL is the service's address, the part before /api/`, details);
    this.name = 'WrongBaseUrlError';
    this.baseUrl = baseUrl;
  }
}

/**
 * A redirect (301, 302, 303, 307, 308). It is never followed: the request carries the token or the
 * credentials, which must go to the configured address only.
 */
export class RedirectError extends ApiError {
  /** Where the answer pointed (the Location header, made absolute), when it said. */
  readonly location?: string;
  constructor(location: string | undefined, suggestedBaseUrl: string | undefined, details: ErrorDetails) {
    const where = location ? `redirected to ${location}` : 'redirected, without saying where';
    const hint = suggestedBaseUrl ? `; if that is the service, use the base URL ${suggestedBaseUrl}` : '';
    super('REDIRECT', `the service ${where} (${details.status}); not followed, since it would send the token or the credentials elsewhere${hint}`, details);
    this.name = 'RedirectError';
    this.location = location === undefined ? undefined : redact(location);
  }
}

/** 405: the path does not take this method. */
export class MethodNotAllowedError extends ApiError {
  constructor(details: ErrorDetails) {
    super('METHOD_NOT_ALLOWED', 'the method is not allowed on this path (405)', details);
    this.name = 'MethodNotAllowedError';
  }
}

/** 413: the request's body is over 250 MB. */
export class PayloadTooLargeError extends ApiError {
  constructor(details: ErrorDetails) {
    super('PAYLOAD_TOO_LARGE', 'the request body is over the 250 MB limit (413)', details);
    this.name = 'PayloadTooLargeError';
  }
}

/** 429 that the client could not wait out (too many in a row, or a Retry-After over `retry.maxRetryAfterMs`). */
export class RateLimitError extends ApiError {
  /** From Retry-After, when the service sent one. */
  readonly retryAfterMs?: number;
  constructor(details: ErrorDetails & { retryAfterMs?: number }) {
    super('RATE_LIMITED', 'the access limit was exceeded (429)', details);
    this.name = 'RateLimitError';
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** 500, 502 or 504 to a read, after its retries. */
export class ServerError extends ApiError {
  constructor(details: ErrorDetails) {
    super('SERVER_ERROR', `the service failed (${details.status ?? 500})`, details);
    this.name = 'ServerError';
  }
}

/** 503 that the client could not wait out: the service is under maintenance (daily 01:00-01:30). */
export class MaintenanceError extends ApiError {
  /** From Retry-After, when the service sent one. */
  readonly retryAfterMs?: number;
  constructor(details: ErrorDetails & { retryAfterMs?: number }) {
    super('MAINTENANCE', 'the service is under maintenance (503; the daily backup runs 01:00-01:30)', details);
    this.name = 'MaintenanceError';
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** The connection failed, after the retries a read allows. */
export class NetworkError extends WdsError {
  constructor(message: string, details: ErrorDetails) {
    super('NETWORK', describe(details, `network error: ${message}`), details);
    this.name = 'NetworkError';
  }
}

/** No answer in time (`timeoutMs`), or a task still running at the end of `tasks.wait`. */
export class TimeoutError extends WdsError {
  constructor(message: string, details: ErrorDetails) {
    super('TIMEOUT', describe(details, message), details);
    this.name = 'TimeoutError';
  }
}

/**
 * An update request whose answer was lost (504, cut connection, timeout) after it may have reached
 * the service: the task may exist, so it is never sent again automatically.
 */
export class UpdateOutcomeUnknownError extends WdsError {
  /** `check`: how to find out whether it was applied, where the caller knows better than the default. */
  constructor(details: ErrorDetails, check = 'Check the data (and recent tasks) before sending it again') {
    super(
      'UPDATE_OUTCOME_UNKNOWN',
      describe(details, 'the answer to this update request was lost after the request may have reached the service; ' +
        `it was not sent again, because the task may already exist. ${check}`),
      details,
    );
    this.name = 'UpdateOutcomeUnknownError';
  }
}

/**
 * A streamed request body failed at its source (a file that changed or could not be read while it
 * was sent): the service never got the whole body, so nothing was done, and sending it again would
 * fail the same way.
 */
export class RequestBodyError extends WdsError {
  /** Which item of the request the body stopped at, when the body's source said so ({@link BodyItemError}). */
  readonly item?: {
    /** The item's place in the request's list (member_data). */
    index: number;
    /** Why that item could not be sent, naming its file. */
    reason: string;
  };

  constructor(message: string, details: ErrorDetails, item?: { index: number; reason: string }) {
    super('REQUEST_BODY', describe(details, `the request was not sent, its body could not be read to its end: ${message}`), details);
    this.name = 'RequestBodyError';
    if (item) this.item = { index: item.index, reason: redact(item.reason) };
  }
}

/**
 * What a request body's source throws when one of its items cannot be sent as it was checked (a
 * file changed or gone since): the request is cut off, and the caller sends the others again.
 */
export class BodyItemError extends Error {
  constructor(
    /** The item's place in the request's list (member_data). */
    readonly index: number,
    /** Why it could not be sent, naming its file. */
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'BodyItemError';
  }
}

/** The service answered something that is not the shape expected. */
export class ResponseShapeError extends WdsError {
  constructor(message: string, details: ErrorDetails) {
    super('INVALID_RESPONSE', describe(details, `the answer does not have the expected shape: ${message}`), details);
    this.name = 'ResponseShapeError';
  }
}

/** A task as it ended. */
export interface FinalTask {
  /** The task's id. */
  id: number;
  /** OK: done; NG: refused, with messages saying why; ERROR: failed. */
  status: 'OK' | 'NG' | 'ERROR';
  /** What the service said about it. */
  messages: string[];
}

/** A task ended NG or ERROR (from `tasks.wait` with `throwOnFailure`). */
export class TaskFailedError extends WdsError {
  /** The task as it ended. */
  readonly task: FinalTask;
  constructor(task: FinalTask) {
    super('TASK_FAILED', `task ${task.id} ended ${task.status}${task.messages.length ? `: ${task.messages.join('; ')}` : ''}`, {
      errors: task.messages,
    });
    this.name = 'TaskFailedError';
    this.task = { ...task, messages: task.messages.map(redact) };
  }
}

/** The error class for a status code of the service (api-v2.md 7). */
export function apiErrorFor(status: number, details: ErrorDetails & { retryAfterMs?: number }): ApiError {
  const withStatus = { ...details, status };
  switch (status) {
    case 400: return new BadRequestError(withStatus);
    case 401: return new AuthenticationError(withStatus);
    case 403: return new ForbiddenError(withStatus);
    case 404: return new NotFoundError(withStatus);
    case 405: return new MethodNotAllowedError(withStatus);
    case 413: return new PayloadTooLargeError(withStatus);
    case 429: return new RateLimitError(withStatus);
    case 503: return new MaintenanceError(withStatus);
    default: return status >= 500 ? new ServerError(withStatus) : new BadRequestError(withStatus);
  }
}

/** Whether this is an error of the client. */
export const isWdsError = (e: unknown): e is WdsError => e instanceof WdsError;
/** Whether this is an answer of the service that is not a success. */
export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;
/** Whether this is a 429 the client could not wait out. */
export const isRateLimitError = (e: unknown): e is RateLimitError => e instanceof RateLimitError;
/** Whether this is a task that ended NG or ERROR. */
export const isTaskFailedError = (e: unknown): e is TaskFailedError => e instanceof TaskFailedError;
/** Whether the base URL looks wrong (a 404 that is not the API's). */
export const isWrongBaseUrlError = (e: unknown): e is WrongBaseUrlError => e instanceof WrongBaseUrlError;
/** Whether the service answered with a redirect, which the client does not follow. */
export const isRedirectError = (e: unknown): e is RedirectError => e instanceof RedirectError;
/** Whether this is an update whose answer was lost (check the data before sending it again). */
export const isUpdateOutcomeUnknownError = (e: unknown): e is UpdateOutcomeUnknownError => e instanceof UpdateOutcomeUnknownError;
