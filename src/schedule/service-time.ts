/**
 * The service's own time and its nightly window (DESIGN.md section 9). The service backs up its
 * data from 01:00 to 01:30 local time and answers 503 meanwhile; a scheduled run due then waits
 * for the window to end instead of failing. The time is read from the `Date` header of one
 * request without a token, so asking costs no token and no slot in the company's windows.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { API_PREFIX } from '../spec/operations.js';
import { MAINTENANCE_WINDOW } from '../spec/limits.js';

/** The service's time zone when none is configured: it is a Japanese service. */
export const DEFAULT_SERVICE_TIME_ZONE = 'Asia/Tokyo';

/** How long one wait lasts at most before the service is asked again. */
const MAX_WAIT_MS = 10 * 60_000;
/** The wait after a 503 that says nothing of when to come back. */
const UNSAID_WAIT_MS = 60_000;
const PROBE_TIMEOUT_MS = 15_000;

export interface ServiceProbe {
  status: number;
  /** The service's time from its `Date` header, epoch ms; null when it sent none. */
  serviceMs: number | null;
  /** Real milliseconds the service asked to wait (Retry-After), if it said. */
  retryAfterMs: number | null;
}

/** One request without a token to the token endpoint; null when the service cannot be reached. */
export async function probeService(baseUrl: string, signal?: AbortSignal): Promise<ServiceProbe | null> {
  const timeout = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  try {
    // A base URL may be given with the API's prefix, as the client takes it.
    const root = baseUrl.replace(/\/+$/, '').replace(new RegExp(`${API_PREFIX.replace(/\./g, '\\.')}$`), '');
    const res = await fetch(`${root}${API_PREFIX}/token`, {
      method: 'GET',
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    await res.body?.cancel();
    const date = res.headers.get('date');
    const serviceMs = date ? Date.parse(date) : NaN;
    return { status: res.status, serviceMs: Number.isFinite(serviceMs) ? serviceMs : null, retryAfterMs: retryAfterMs(res.headers.get('retry-after')) };
  } catch {
    return null;
  }
}

/** Retry-After as seconds or as an HTTP date, in real milliseconds. */
function retryAfterMs(value: string | null): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}

/** Hours and minutes of `ms` in the time zone, as minutes after midnight, and seconds past the minute. */
export function localClock(ms: number, timeZone: string): { minuteOfDay: number; second: number; text: string } {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  }).formatToParts(new Date(ms));
  const get = (type: string): string => parts.find((p) => p.type === type)?.value ?? '00';
  return {
    minuteOfDay: Number(get('hour')) * 60 + Number(get('minute')),
    second: Number(get('second')),
    text: `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}:${get('second')}`,
  };
}

/** Whether `ms` falls in 01:00-01:30 service local time. */
export function inMaintenanceWindow(ms: number, timeZone: string): boolean {
  const { minuteOfDay } = localClock(ms, timeZone);
  return minuteOfDay >= MAINTENANCE_WINDOW.startMinute && minuteOfDay < MAINTENANCE_WINDOW.endMinute;
}

/** Service milliseconds from `ms` to the end of the window (01:30 local). */
function untilWindowEnds(ms: number, timeZone: string): number {
  const { minuteOfDay, second } = localClock(ms, timeZone);
  return Math.max(1000, ((MAINTENANCE_WINDOW.endMinute - minuteOfDay) * 60 - second) * 1000);
}

export interface ServiceWait {
  /** Real milliseconds spent waiting. */
  waitedMs: number;
  /** The service's time when it was last asked, `YYYY-MM-DD HH:MM:SS` local; null when unknown. */
  serviceTime: string | null;
}

/**
 * Resolves once the service is out of its nightly window and not answering 503 (or cannot be
 * reached: the run then says why itself). A 503's Retry-After sets the wait; inside the window
 * without one, the rest of the window is waited (at most 10 minutes at a time, then asked again).
 * Resolves early when `signal` aborts.
 */
export async function waitForService(
  baseUrl: string,
  options: { timeZone: string; signal?: AbortSignal; onWait?: (message: string) => void; probe?: typeof probeService },
): Promise<ServiceWait> {
  const probe = options.probe ?? probeService;
  const started = Date.now();
  let told = false;
  for (;;) {
    const answer = await probe(baseUrl, options.signal);
    const serviceTime = answer?.serviceMs != null ? localClock(answer.serviceMs, options.timeZone).text : null;
    if (!answer || options.signal?.aborted) return { waitedMs: Date.now() - started, serviceTime };
    const inWindow = answer.serviceMs != null && inMaintenanceWindow(answer.serviceMs, options.timeZone);
    if (answer.status !== 503 && !inWindow) return { waitedMs: Date.now() - started, serviceTime };
    if (!told) {
      told = true;
      options.onWait?.(inWindow
        ? `the service's time is ${serviceTime}, in its nightly maintenance window (01:00-01:30); waiting until it ends`
        : `the service answers 503 (maintenance) at ${serviceTime ?? 'an unknown time'}; waiting until it answers again`);
    }
    const wanted = answer.retryAfterMs ?? (inWindow ? untilWindowEnds(answer.serviceMs!, options.timeZone) : UNSAID_WAIT_MS);
    try {
      await sleep(Math.min(Math.max(wanted, 500), MAX_WAIT_MS), undefined, { signal: options.signal });
    } catch {
      return { waitedMs: Date.now() - started, serviceTime };
    }
  }
}
