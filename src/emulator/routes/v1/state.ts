/**
 * What the legacy interface keeps per company beside the shared data: its own limit windows
 * (60 requests an hour, 5 tokens in 60 minutes), the progress ids of its update tasks, and its
 * asynchronous sheet reads. A reset of the company (new data object) resets all of it.
 */
import type { Company } from '../../company.js';
import { SlidingWindow } from '../../limits.js';

/** api-v1-legacy.md 8. */
export const LEGACY_REQUESTS_PER_HOUR = 60;
export const LEGACY_TOKENS_PER_HOUR = 5;
export const LEGACY_TOKEN_LIFETIME_SECONDS = 3600;

export interface AsyncRead {
  sheetId: number;
  /** Service ms when it was requested, when the job starts running and when it is done. */
  requestedAt: number;
  runAt: number;
  doneAt: number;
  headers: Record<string, string>;
  records: Record<string, string>[];
}

export class LegacyState {
  readonly requestWindow: SlidingWindow;
  readonly tokenWindow: SlidingWindow;
  /** Task ids (of the company's task queue) created through v1: only these answer /task/{id}. */
  readonly taskIds = new Set<number>();
  readonly asyncReads = new Map<string, AsyncRead>();
  /** The data object this state belongs to: a reset replaces it, and the state with it. */
  readonly data: object;

  constructor(company: Company) {
    const { limits } = company.settings;
    this.data = company.data;
    this.requestWindow = new SlidingWindow(limits.legacyRequestsPerHour ?? LEGACY_REQUESTS_PER_HOUR, 3600_000);
    this.tokenWindow = new SlidingWindow(limits.legacyTokensPerHour ?? LEGACY_TOKENS_PER_HOUR, 3600_000);
  }
}

const states = new WeakMap<Company, LegacyState>();

export function legacyState(company: Company): LegacyState {
  let state = states.get(company);
  if (!state || state.data !== company.data) {
    state = new LegacyState(company);
    states.set(company, state);
  }
  return state;
}
