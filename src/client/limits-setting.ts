/**
 * The client's own limit windows as one line of text, for the `WDS_CLIENT_LIMITS` environment
 * variable of the CLI: `off` switches them off (only the service's 429 answers hold requests back,
 * waited out as Retry-After says); `update=5/1m,request=3000/1h,token=1000/1h` sets some or all of
 * them, for a contract with other limits or an emulator whose clock runs faster than real time.
 */
import { OptionsError } from './errors.js';
import type { WindowLimit } from './limiter.js';
import type { WindowName } from './window-store.js';

export type LimitsSetting = false | Partial<Record<WindowName, WindowLimit>>;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const WINDOWS = new Set<string>(['update', 'request', 'token']);

/** Reads the setting; `name` is what a message calls it (the variable's name). */
export function parseLimitsSetting(text: string, name = 'WDS_CLIENT_LIMITS'): LimitsSetting {
  const trimmed = text.trim();
  if (trimmed.toLowerCase() === 'off') return false;
  const windows: Partial<Record<WindowName, WindowLimit>> = {};
  for (const part of trimmed.split(',')) {
    const match = /^\s*(\w+)\s*=\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(part);
    if (!match || !WINDOWS.has(match[1]!) || Number(match[2]) < 1 || Number(match[3]) <= 0) {
      throw new OptionsError(
        `${name} must be "off" or a list such as update=5/1m,request=3000/1h,token=1000/1h (a whole number of 1 or more per duration in ms, s, m or h); got "${part.trim()}"`,
      );
    }
    windows[match[1] as WindowName] = { limit: Number(match[2]), windowMs: Number(match[3]) * UNIT_MS[match[4]!]! };
  }
  return windows;
}
