/**
 * The limiter's windows on disk, so that two commands run back to back (or at once) against the
 * same company share them. Read-modify-write happens under a lock file created with O_EXCL; a lock
 * older than a few seconds was left by a killed process and is taken over. Waiting for the lock
 * never blocks the event loop: downloads and polls in flight go on meanwhile.
 */
import { mkdirSync, openSync, closeSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { cacheFolder } from '../util/xdg.js';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { WaitMeter } from './wait-meter.js';
import { emptyStamps, type WindowStamps, type WindowStore } from './window-store.js';

const STALE_LOCK_MS = 5_000;

/**
 * `~/.cache/wds-files/limits-<hash of the consumer key>.json` (XDG_CACHE_HOME honoured). The limits
 * are the company's, and the consumer key names the company, while one service answers under many
 * spellings of its URL (127.0.0.1 or localhost, a proxy, a trailing slash): keyed by the URL, two
 * runs against one company would each fill a window of their own. The key is hashed so that the
 * file name does not show it.
 */
export function defaultStateFile(consumerKey: string, prefix = 'limits'): string {
  const id = createHash('sha256').update(consumerKey).digest('hex').slice(0, 16);
  return join(cacheFolder(), `${prefix}-${id}.json`);
}

export class StateFile implements WindowStore {
  private readonly lockPath: string;

  constructor(readonly path: string) {
    this.lockPath = `${path}.lock`;
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      throw new Error(`cannot keep the client's limit windows in ${dirname(path)} (${code ?? message}): set XDG_CACHE_HOME to a folder you can write, or WDS_CLIENT_LIMITS=off to leave the limits to the service`, { cause: error });
    }
  }

  /**
   * Runs `change` on the stamps under the lock and saves what it returns. `meter` counts the time
   * spent waiting for another process to release the lock.
   */
  async update<T>(change: (stamps: WindowStamps) => { stamps: WindowStamps; result: T }, meter?: WaitMeter): Promise<T> {
    await this.lock(meter);
    try {
      const { stamps, result } = change(this.read());
      const temp = `${this.path}.${process.pid}.tmp`;
      writeFileSync(temp, JSON.stringify({ version: 1, windows: stamps }));
      renameSync(temp, this.path);
      return result;
    } finally {
      rmSync(this.lockPath, { force: true });
    }
  }

  private read(): WindowStamps {
    try {
      const saved = JSON.parse(readFileSync(this.path, 'utf8')) as { version?: number; windows?: Partial<WindowStamps> };
      const w = saved.windows ?? {};
      const list = (v: unknown): number[] => (Array.isArray(v) ? v.filter((x): x is number => typeof x === 'number') : []);
      return { update: list(w.update), request: list(w.request), token: list(w.token) };
    } catch {
      // Missing or damaged: start empty (the service's own 429 remains the backstop).
      return emptyStamps();
    }
  }

  private async lock(meter?: WaitMeter): Promise<void> {
    let endWait: (() => void) | undefined;
    try {
      for (let attempt = 0; ; attempt += 1) {
        try {
          closeSync(openSync(this.lockPath, 'wx'));
          return;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
          endWait ??= meter?.begin();
          try {
            if (Date.now() - statSync(this.lockPath).mtimeMs > STALE_LOCK_MS) rmSync(this.lockPath, { force: true });
          } catch {
            // The holder released it meanwhile.
          }
          await delay(Math.min(20, 1 + attempt));
        }
      }
    } finally {
      endWait?.();
    }
  }
}
