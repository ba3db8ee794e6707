/**
 * Sliding windows over service time: the emulator refuses what the real service would refuse
 * (api-v2.md 8). A sliding window is at least as strict as any fixed window of the same length,
 * so a client that passes here passes there.
 */
export class SlidingWindow {
  private readonly stamps: number[] = [];

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  private prune(now: number): void {
    // A clock set back leaves stamps in the future: they count as taken now, so they still count
    // for a window from now and no longer (not a window past their old time).
    for (let i = this.stamps.length - 1; i >= 0 && this.stamps[i]! > now; i -= 1) this.stamps[i] = now;
    const from = now - this.windowMs;
    let drop = 0;
    while (drop < this.stamps.length && this.stamps[drop]! <= from) drop += 1;
    if (drop) this.stamps.splice(0, drop);
  }

  /** Seconds until one more would be allowed; 0 when it is allowed now. */
  retryAfterSeconds(now: number): number {
    this.prune(now);
    if (this.stamps.length < this.limit) return 0;
    const oldest = this.stamps[this.stamps.length - this.limit]!;
    return Math.max(1, Math.ceil((oldest + this.windowMs - now) / 1000));
  }

  /** Counts one at `now` if allowed; returns whether it was. */
  take(now: number): boolean {
    if (this.retryAfterSeconds(now) > 0) return false;
    this.stamps.push(now);
    return true;
  }

  get used(): number {
    return this.stamps.length;
  }

  reset(): void {
    this.stamps.length = 0;
  }
}

export interface CompanyLimits {
  requestsPerHour: number;
  updatesPerMinute: number;
  tokensPerHour: number;
  /** The legacy interface's own windows (api-v1-legacy.md 8); 60 and 5 when absent. */
  legacyRequestsPerHour?: number;
  legacyTokensPerHour?: number;
}
