/**
 * Access tokens (api-v2.md 5): issued lazily with HTTP Basic and a form body, one issuance shared
 * by every concurrent caller, renewed before expiry (`expire_in`, or `expires_in`, default 3,600
 * s), and renewed once when the service answers 401. Each issuance takes a slot of the 1,000
 * tokens an hour window. With a {@link TokenCache}, a token still valid from an earlier run is used
 * first, and each new one is kept for the next run.
 */
import { registerSecret } from '../util/redact.js';
import { tokenSchema } from '../spec/schemas.js';
import { TOKEN_LIFETIME_SECONDS } from '../spec/limits.js';
import { ResponseShapeError } from './errors.js';
import type { TokenCache } from './token-cache.js';

export interface IssuedToken {
  value: string;
  expiresAt: number;
}

/** Sends the token request and answers its parsed JSON (the transport applies retries). */
export type TokenRequester = (basicCredentials: string) => Promise<unknown>;

export class TokenManager {
  private current: IssuedToken | null = null;
  private pending: Promise<IssuedToken> | null = null;
  /** Tokens the service refused: never taken from the cache again, should it still hold one. */
  private readonly refused = new Set<string>();
  private readonly credentials: string;
  issued = 0;

  constructor(
    consumerKey: string,
    consumerSecret: string,
    private readonly requestToken: TokenRequester,
    private readonly renewBeforeMs: number,
    private readonly cache: TokenCache | null = null,
  ) {
    this.credentials = Buffer.from(`${consumerKey}:${consumerSecret}`).toString('base64');
    registerSecret(consumerSecret);
    registerSecret(this.credentials);
  }

  /** A live token: the current one, the one being issued, or a new one. */
  async get(): Promise<string> {
    if (this.current && this.live(this.current)) return this.current.value;
    this.pending ??= this.cachedOrIssued().finally(() => {
      this.pending = null;
    });
    return (await this.pending).value;
  }

  /** Drops `token` after the service refused it; a newer token already issued is kept. */
  invalidate(token: string): void {
    if (this.current?.value === token) this.current = null;
    this.refused.add(token);
    this.cache?.forget(token);
  }

  private live(token: IssuedToken): boolean {
    return token.expiresAt - this.renewBeforeMs > Date.now();
  }

  private async cachedOrIssued(): Promise<IssuedToken> {
    const cached = this.cache?.load();
    if (cached && this.live(cached) && !this.refused.has(cached.value)) {
      registerSecret(cached.value);
      this.current = cached;
      return cached;
    }
    const issued = await this.issue();
    this.cache?.save(issued);
    return issued;
  }

  private async issue(): Promise<IssuedToken> {
    const answer = await this.requestToken(this.credentials);
    const parsed = tokenSchema.safeParse(answer);
    if (!parsed.success) {
      throw new ResponseShapeError('the token answer has no access_token', { method: 'POST', path: '/token' });
    }
    registerSecret(parsed.data.access_token);
    // wire-format.md: some clients read `expires_in`; accept either, default one hour.
    const seconds = Number(parsed.data.expire_in ?? parsed.data.expires_in ?? TOKEN_LIFETIME_SECONDS);
    const lifetime = Number.isFinite(seconds) && seconds > 0 ? seconds : TOKEN_LIFETIME_SECONDS;
    this.issued += 1;
    this.current = { value: parsed.data.access_token, expiresAt: Date.now() + lifetime * 1000 };
    return this.current;
  }
}
