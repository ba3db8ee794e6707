/**
 * How long to wait before the next attempt: the service's Retry-After when it gave one, else
 * exponential backoff with jitter (ky and undici's retry handler do the same).
 */

/**
 * When and how often a failed request is sent again. The client and the export downloads each
 * have their own defaults (`WdsClientOptions.retry`, `ExportOptions.retry`).
 */
export interface RetryPolicy {
  /** Attempts for reads and for the retryable failures of updates, the first one included. */
  maxAttempts: number;
  /** First backoff delay in milliseconds; it doubles with each attempt, with jitter. */
  baseDelayMs: number;
  /** Longest backoff delay in milliseconds. */
  maxDelayMs: number;
  /** Longest single wait on a Retry-After (429, 503) before giving up, in milliseconds. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 300,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 40 * 60_000,
};

/** Backoff for attempt 1, 2, ... : base * 2^(attempt-1), capped, with "equal jitter". */
export function backoffDelay(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** Retry-After as milliseconds: delta seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * `promise`, or the signal's reason as soon as `signal` is aborted: the caller stops waiting, and
 * the work goes on for whoever else waits on it (a token issued for every concurrent call).
 */
export function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined); // its own waiters see its failure; this caller has left
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
