/**
 * The service's limits as sliding windows on the client side (api-v2.md 8): 5 update requests a
 * minute, 3,000 requests and 1,000 tokens an hour. Shared by every concurrent caller of a client,
 * and across processes through a state file or another shared store. The mechanism is here; the policy (which window a
 * request takes) is the client's. A request the limiter knows would be refused waits instead, and
 * the wait is announced through `onWait`.
 *
 * A request takes its slot, stamped with the time it leaves, and is stamped again when its answer
 * comes back (or the client gives up on it): the service counted it on arrival, before that
 * moment, so a window held from the second stamp can never end before the service's does.
 */
import { sleep } from './retry.js';
import { StateFile } from './state-file.js';
import { emptyStamps, type WindowName, type WindowStamps, type WindowStore } from './window-store.js';
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
   * Each window is held this share of its length longer than the service's. Default: 250 ms, or 5 %
   * of a window shorter than 5 s (see {@link DEFAULT_MARGIN_MS}).
   */
  marginRatio?: number;
  /** Where the windows are shared with other processes; null or absent: this limiter's memory. */
  store?: WindowStore | null;
  onWait?: (event: WaitEvent) => void;
  /** Counts the time spent waiting for a window or for the state file's lock. */
  meter?: WaitMeter;
}

/**
 * How much longer than the service's a window is held by default. Stamps are moved to when the
 * answer came, so what is left to cover is a request still on its way when its window ends
 * (stamped as it left, counted a connection's set-up later: a TLS handshake over a long route
 * takes about this), and clocks read to the millisecond with timers that may fire one early.
 */
export const DEFAULT_MARGIN_MS = 250;

/** A request's place in its windows, from the moment it may leave until {@link Limiter.settle}. */
export interface Slot {
  readonly names: readonly WindowName[];
  readonly stamp: number;
}

const REASON: Record<WindowName, WaitReason> = { update: 'update-limit', request: 'request-limit', token: 'token-limit' };

export class Limiter {
  private memory: WindowStamps = emptyStamps();
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly options: LimiterOptions) {}

  private span(name: WindowName): number {
    const { windowMs } = this.options.windows[name];
    const ratio = this.options.marginRatio;
    return windowMs + (ratio === undefined ? Math.min(DEFAULT_MARGIN_MS, windowMs * 0.05) : windowMs * ratio);
  }

  /**
   * Waits until one more request fits in every named window, then counts it there; settle the
   * slot when the answer comes. Once `signal` is aborted it throws the signal's reason and takes
   * nothing, also when the request's turn comes behind others with no wait left.
   */
  acquire(names: WindowName[], signal?: AbortSignal): Promise<Slot> {
    const key = [...names].sort().join('+');
    const previous = this.queues.get(key) ?? Promise.resolve();
    const run = previous.then(() => this.acquireNow(names, signal));
    this.queues.set(key, run.then(() => undefined, () => undefined));
    return run;
  }

  /**
   * Stamps the slot's request again, now that its answer came or the client gave up on it: the
   * service counted it by then. Never throws: a stamp not moved leaves the earlier, and the
   * service's own 429 remains the backstop.
   */
  async settle(slot: Slot): Promise<void> {
    const restamp = (stamps: WindowStamps): { stamps: WindowStamps; result: void } => {
      const now = Date.now();
      for (const name of slot.names) {
        const list = stamps[name];
        const at = list.indexOf(slot.stamp);
        // A stamp already dropped (a request on its way longer than its window) counts from now.
        if (at >= 0) list[at] = Math.max(now, slot.stamp);
        else list.push(now);
        list.sort((a, b) => a - b);
      }
      return { stamps, result: undefined };
    };
    try {
      const file = this.options.store;
      if (file) await file.update(restamp, this.options.meter);
      else restamp(this.memory);
    } catch {
      // The state file could not be written: the slot keeps the stamp it was taken with.
    }
  }

  /**
   * Gives the slot back: its request provably never reached the service (the connection was
   * refused, the TLS handshake failed, or it was never sent), so the service counted nothing and
   * neither does the window. Never throws, as `settle`.
   */
  async release(slot: Slot): Promise<void> {
    const drop = (stamps: WindowStamps): { stamps: WindowStamps; result: void } => {
      for (const name of slot.names) {
        const at = stamps[name].indexOf(slot.stamp);
        if (at >= 0) stamps[name].splice(at, 1);
      }
      return { stamps, result: undefined };
    };
    try {
      const file = this.options.store;
      if (file) await file.update(drop, this.options.meter);
      else drop(this.memory);
    } catch {
      // The state file could not be written: the slot stays counted, which only errs on the safe side.
    }
  }

  private async acquireNow(names: WindowName[], signal?: AbortSignal): Promise<Slot> {
    for (;;) {
      signal?.throwIfAborted();
      const [wait, name, stamp] = await this.tryTake(names);
      if (wait <= 0) return { names: [...names], stamp: stamp! };
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

  /** [0, , the stamp] when taken; else [ms to wait, the window that is full]. */
  private async tryTake(names: WindowName[]): Promise<[number, WindowName?, number?]> {
    const decide = (stamps: WindowStamps): { stamps: WindowStamps; result: [number, WindowName?, number?] } => {
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
      if (wait > 0) return { stamps, result: [Math.ceil(wait), full] };
      for (const name of names) stamps[name].push(now);
      return { stamps, result: [0, undefined, now] };
    };
    const file = this.options.store;
    if (file) return file.update(decide, this.options.meter);
    const { stamps, result } = decide(this.memory);
    this.memory = stamps;
    return result;
  }

  /** How many of a window's slots are in use now (for progress displays and tests). */
  async used(name: WindowName): Promise<number> {
    const file = this.options.store;
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
 * `windowStore` when given, else in `stateFile` (or the client's default file), or in memory alone
 * when `stateFile` is false.
 */
export function limiterFor<L extends { marginRatio?: number }>(
  options: { limits: false | L; stateFile?: string | false; windowStore?: WindowStore },
  setup: { defaultFile: () => string; windows: (limits: L) => Record<WindowName, WindowLimit>; meter: WaitMeter; onWait: (event: WaitEvent) => void },
): Limiter | null {
  if (options.limits === false) return null;
  const store = options.windowStore ?? (options.stateFile === false ? null : new StateFile(options.stateFile ?? setup.defaultFile()));
  return new Limiter({ windows: setup.windows(options.limits), marginRatio: options.limits.marginRatio, store, meter: setup.meter, onWait: setup.onWait });
}
