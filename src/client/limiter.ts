/**
 * The service's limits as sliding windows on the client side (api-v2.md 8): 5 update requests a
 * minute, 3,000 requests and 1,000 tokens an hour. Shared by every concurrent caller of a client,
 * and across processes through a state file. The mechanism is here; the policy (which window a
 * request takes) is the client's. A request the limiter knows would be refused waits instead, and
 * the wait is announced through `onWait`.
 */
import { sleep } from './retry.js';
import { StateFile, emptyStamps, type WindowName, type WindowStamps } from './state-file.js';
import type { WaitMeter } from './wait-meter.js';

export interface WindowLimit {
  limit: number;
  windowMs: number;
}

/**
 * Why a request waits: one of the client's own limits is full (`update-limit`, `request-limit`,
 * `token-limit`), the service answered 429 (`rate-limited`) or 503 (`maintenance`), or a failed
 * read backs off before it is sent again (`retry`).
 */
export type WaitReason = 'update-limit' | 'request-limit' | 'token-limit' | 'rate-limited' | 'maintenance' | 'retry';

/** A wait announced through `onWait`, before it starts. */
export interface WaitEvent {
  /** Why the request waits. */
  reason: WaitReason;
  /** How long it waits, in milliseconds. */
  waitMs: number;
  /** The wait in words, such as `waiting 58.6 s: 5 update requests per minute reached`. */
  message: string;
}

export interface LimiterOptions {
  windows: Record<WindowName, WindowLimit>;
  /**
   * Each window is held this much longer than the service's, because the service counts a request
   * when it arrives, a little after we count it. Default: 5 % of the window, at least 50 ms.
   */
  marginRatio?: number;
  stateFile?: StateFile | null;
  onWait?: (event: WaitEvent) => void;
  /** Counts the time spent waiting for a window or for the state file's lock. */
  meter?: WaitMeter;
}

const REASON: Record<WindowName, WaitReason> = { update: 'update-limit', request: 'request-limit', token: 'token-limit' };

export class Limiter {
  private memory: WindowStamps = emptyStamps();
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly options: LimiterOptions) {}

  private span(name: WindowName): number {
    const { windowMs } = this.options.windows[name];
    return windowMs + Math.max(50, windowMs * (this.options.marginRatio ?? 0.05));
  }

  /** Waits until one more request fits in every named window, then counts it there. */
  acquire(names: WindowName[], signal?: AbortSignal): Promise<void> {
    const key = [...names].sort().join('+');
    const previous = this.queues.get(key) ?? Promise.resolve();
    const run = previous.then(() => this.acquireNow(names, signal));
    this.queues.set(key, run.catch(() => undefined));
    return run;
  }

  private async acquireNow(names: WindowName[], signal?: AbortSignal): Promise<void> {
    for (;;) {
      const [wait, name] = await this.tryTake(names);
      if (wait <= 0) return;
      const { limit, windowMs } = this.options.windows[name!];
      this.options.onWait?.({
        reason: REASON[name!],
        waitMs: wait,
        message: `waiting ${(wait / 1000).toFixed(1)} s: ${limit} ${name} requests per ${formatWindow(windowMs)} reached`,
      });
      const endWait = this.options.meter?.begin();
      try {
        await sleep(wait, signal);
      } finally {
        endWait?.();
      }
    }
  }

  /** [0] when taken; else [ms to wait, the window that is full]. */
  private async tryTake(names: WindowName[]): Promise<[number, WindowName?]> {
    const decide = (stamps: WindowStamps): { stamps: WindowStamps; result: [number, WindowName?] } => {
      const now = Date.now();
      let wait = 0;
      let full: WindowName | undefined;
      for (const name of Object.keys(stamps) as WindowName[]) {
        const span = this.span(name);
        stamps[name] = stamps[name].filter((t) => t > now - span && t <= now + 1000).sort((a, b) => a - b);
      }
      for (const name of names) {
        const list = stamps[name];
        const { limit } = this.options.windows[name];
        if (list.length >= limit) {
          const until = list[list.length - limit]! + this.span(name) - now;
          if (until > wait) {
            wait = until;
            full = name;
          }
        }
      }
      if (wait <= 0) for (const name of names) stamps[name].push(now);
      return { stamps, result: [Math.ceil(wait), full] };
    };
    const file = this.options.stateFile;
    if (file) return file.update(decide, this.options.meter);
    const { stamps, result } = decide(this.memory);
    this.memory = stamps;
    return result;
  }

  /** How many of a window's slots are in use now (for progress displays and tests). */
  async used(name: WindowName): Promise<number> {
    const file = this.options.stateFile;
    const count = (stamps: WindowStamps): number => stamps[name].filter((t) => t > Date.now() - this.span(name)).length;
    if (file) return file.update((stamps) => ({ stamps, result: count(stamps) }));
    return count(this.memory);
  }
}

function formatWindow(ms: number): string {
  if (ms === 60_000) return 'minute';
  if (ms === 3_600_000) return 'hour';
  return `${ms / 1000} s`;
}

/**
 * A client's limiter from its options: null when its limits are off, else its windows kept in
 * `stateFile` (or the client's default file), or in memory alone when `stateFile` is false.
 */
export function limiterFor<L extends { marginRatio?: number }>(
  options: { limits: false | L; stateFile?: string | false },
  setup: { defaultFile: () => string; windows: (limits: L) => Record<WindowName, WindowLimit>; meter: WaitMeter; onWait: (event: WaitEvent) => void },
): Limiter | null {
  if (options.limits === false) return null;
  const stateFile = options.stateFile === false ? null : new StateFile(options.stateFile ?? setup.defaultFile());
  return new Limiter({ windows: setup.windows(options.limits), marginRatio: options.limits.marginRatio, stateFile, meter: setup.meter, onWait: setup.onWait });
}
