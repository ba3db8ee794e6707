/**
 * A still-valid access token kept between runs, so that runs back to back share one token instead
 * of each taking one of the hour's (the legacy interface issues 5 an hour). The file is a secret:
 * it is written with mode 0600 in a folder of mode 0700, replaced by a rename, and holds the token
 * with its deadline and a hash that ties it to the key and secret it was issued for.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { stateFolder } from '../util/xdg.js';
import { dirname, join } from 'node:path';

/** A token and the time it expires (ms since the epoch, this machine's clock). */
export interface CachedToken {
  value: string;
  expiresAt: number;
}

/**
 * `$XDG_STATE_HOME/wds-files/tokens/<kind>-<hash>.json` (`~/.local/state` when XDG_STATE_HOME is not
 * set). Keyed by the interface (`v2`, `legacy-v1.2`), the base URL and the consumer key: a token is
 * only ever sent to the address that issued it. The hash keeps the key out of the file name.
 */
export function defaultTokenCacheFile(kind: string, baseUrl: string, consumerKey: string): string {
  const id = createHash('sha256').update(`${kind}\n${baseUrl}\n${consumerKey}`).digest('hex').slice(0, 24);
  return join(stateFolder(), 'tokens', `${kind}-${id}.json`);
}

export class TokenCache {
  private readonly owner: string;

  /** `consumerKey` and `consumerSecret` make the hash a cached token must match to be used. */
  constructor(readonly path: string, consumerKey: string, consumerSecret: string) {
    // A token issued for another secret (rotated, or a typo) is not used: the run must fail as
    // that secret would, not succeed for an hour on a token the old one earned.
    this.owner = createHash('sha256').update(`wds-files token cache\0${consumerKey}\0${consumerSecret}`).digest('hex');
  }

  /** The cached token when it is there, readable and issued for these credentials; else null. */
  load(): CachedToken | null {
    try {
      const saved = JSON.parse(readFileSync(this.path, 'utf8')) as { owner?: unknown; access_token?: unknown; expires_at?: unknown };
      if (saved.owner !== this.owner || typeof saved.access_token !== 'string' || !saved.access_token) return null;
      if (typeof saved.expires_at !== 'number' || !Number.isFinite(saved.expires_at)) return null;
      return { value: saved.access_token, expiresAt: saved.expires_at };
    } catch {
      // Missing or damaged: the token is issued anew.
      return null;
    }
  }

  /** Keeps `token` for the next run; a cache that cannot be written only costs that run a token. */
  save(token: CachedToken): void {
    const temp = `${this.path}.${process.pid}.tmp`;
    try {
      const dir = dirname(this.path);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // A folder made earlier with a looser mode is tightened: the file names show which services are used.
      chmodSync(dir, 0o700);
      rmSync(temp, { force: true });
      writeFileSync(temp, JSON.stringify({ version: 1, owner: this.owner, access_token: token.value, expires_at: token.expiresAt }), { mode: 0o600, flag: 'wx' });
      renameSync(temp, this.path);
    } catch {
      quietlyRemove(temp);
    }
  }

  /** Drops the cached token when it is `value` (the service refused it). */
  forget(value: string): void {
    if (this.load()?.value === value) quietlyRemove(this.path);
  }
}

function quietlyRemove(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Left behind: a later save replaces it, and a refused token is refused again, then renewed.
  }
}

/** The cache a client's `tokenCache` option asks for: none, the default file, or the file named. */
export function tokenCacheOf(option: boolean | string, kind: string, o: { baseUrl: string; consumerKey: string; consumerSecret: string }): TokenCache | null {
  if (option === false) return null;
  const path = option === true ? defaultTokenCacheFile(kind, o.baseUrl, o.consumerKey) : option;
  return new TokenCache(path, o.consumerKey, o.consumerSecret);
}
