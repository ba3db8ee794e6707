/**
 * Every legacy request goes through `WdsClient`'s transport (its retry policy, error classes and
 * redacted request lines) and a limiter of its own windows: 60 requests an hour and 5 tokens in 60
 * minutes, shared across processes in a state file of its own, keyed by consumer key. The token is
 * issued by body (`/get_token`) and sent as `X-SERVICE-TOKEN`.
 */
import type { z } from 'zod';
import { Limiter, limiterFor, type WaitEvent } from '../limiter.js';
import { Transport, markNeverSent } from '../transport.js';
import { TokenManager } from '../auth.js';
import { WaitMeter } from '../wait-meter.js';
import { tokenCacheOf } from '../token-cache.js';
import { ResponseShapeError } from '../errors.js';
import type { ResolvedOptions, WindowOption } from '../options.js';
import { registerSecret } from '../../util/redact.js';
import { checkVersion, kindOf, normalisePath, type LegacyKind } from './operations.js';
import { defaultLegacyStateFile, type LegacyWaitEvent, type LegacyWaitReason, type ResolvedLegacyOptions } from './options.js';

/** One legacy request. */
export interface LegacyCall {
  /** The body; `{}` when undefined. */
  body?: unknown;
  /** Send `dryrun: 1`. */
  dryRun?: boolean;
  /** Overrides what the path says: `update` is never sent again after its answer is lost. */
  kind?: LegacyKind;
  signal?: AbortSignal;
}

export class LegacyTransport {
  readonly limiter: Limiter | null;
  readonly tokens: TokenManager;
  /** @internal WdsClient's transport, used for its send and retry loop. */
  readonly inner: Transport;

  constructor(readonly options: ResolvedLegacyOptions) {
    const o = options;
    registerSecret(o.consumerSecret);
    const meter = new WaitMeter();
    this.limiter = limiterFor(o, {
      defaultFile: () => defaultLegacyStateFile(o.consumerKey),
      // The legacy interface has no update window; it is never taken, only kept in the file.
      windows: (limits) => ({ request: limits.request, token: limits.token, update: limits.request }),
      meter,
      onWait: (event) => {
        const said = { ...event, message: windowMessage(event, o.limits === false ? null : o.limits) };
        this.announce(said);
        o.logger?.info(said.message);
      },
    });
    const inner: ResolvedOptions = {
      baseUrl: o.baseUrl,
      consumerKey: o.consumerKey,
      consumerSecret: o.consumerSecret,
      dryRun: o.dryRun,
      limits: false,
      stateFile: false,
      tokenCache: false,
      retry: o.retry,
      timeoutMs: o.timeoutMs,
      tokenRenewBeforeMs: o.tokenRenewBeforeMs,
      connections: 2,
      onWait: (event) => this.announce(event),
      logger: o.logger,
      dispatcher: o.dispatcher,
      userAgent: o.userAgent,
    };
    this.inner = new Transport(inner, this.limiter, () => this.tokens, meter);
    const cache = tokenCacheOf(o.tokenCache, `legacy-${o.version}`, o);
    this.tokens = new TokenManager(o.consumerKey, o.consumerSecret, () => this.requestToken(), o.tokenRenewBeforeMs, cache);
  }

  /** Time held back by the limits, Retry-After, backoff (overlapping waits counted once), and request counts. */
  get counters(): Transport['counters'] {
    return this.inner.counters;
  }

  /** Tells `onWait` of a wait (the announced event carries both `ms` and `waitMs`). */
  announce(event: WaitEvent | { reason: LegacyWaitReason; waitMs: number; message: string }): void {
    const legacy: LegacyWaitEvent = { reason: event.reason as LegacyWaitReason, ms: event.waitMs, waitMs: event.waitMs, message: event.message };
    this.options.onWait?.(legacy);
  }

  /** The client's signal and a call's, as one. */
  signal(call?: AbortSignal): AbortSignal | undefined {
    const own = this.options.signal;
    if (own && call) return AbortSignal.any([own, call]);
    return own ?? call;
  }

  private url(path: string, query = ''): string {
    return `${this.options.baseUrl}/api/${this.options.version}/${path}${query}`;
  }

  private async requestToken(): Promise<unknown> {
    const path = `/api/${this.options.version}/get_token`;
    // The secret travels in the body; the request line names the path only.
    const body = JSON.stringify({ consumer_key: this.options.consumerKey, consumer_secret: this.options.consumerSecret });
    const headers = { 'Content-Type': 'application/json', 'User-Agent': this.options.userAgent };
    const url = this.url('get_token');
    const target = { method: 'POST', path, url, windows: ['token' as const], mutating: false, fixedPath: true };
    const answer = await this.inner.withRetries(target, () => this.inner.send('POST', url, headers, body, this.signal()), this.signal());
    this.inner.checkTokenAnswer(target, answer);
    return answer;
  }

  /**
   * POSTs `call.body` to `path` under the version's base: token (renewed once on a 401), the
   * request window, retries for reads, none after a lost update answer. Answers the HTTP status and
   * the body of a 2xx answer; others throw the `WdsClient` error of their status.
   */
  async post(path: string, call: LegacyCall = {}): Promise<{ status: number; body: unknown }> {
    checkVersion(path, this.options.version);
    const p = normalisePath(path);
    const kind = call.kind ?? kindOf(p);
    const signal = this.signal(call.signal);
    let payload: unknown = call.body ?? {};
    let query = '';
    if (call.dryRun) {
      // wire-format.md: `dryrun` in the body or the query; the body when it is an object.
      if (payload && typeof payload === 'object' && !Array.isArray(payload)) payload = { ...payload, dryrun: 1 };
      else query = '?dryrun=1';
    }
    const text = JSON.stringify(payload);
    const shown = `/api/${this.options.version}/${p}`;
    let renewed = false;
    let status = 0;
    // The token first: issuing one between the window's stamp and the send would make the request
    // arrive later than the stamp says.
    let first: string | undefined = await this.tokens.get();
    const target = { method: 'POST', path: shown, url: this.url(p), windows: ['request' as const], mutating: kind === 'update' };
    const body = await this.inner.withRetries(target, async () => {
      let token: string;
      try {
        token = first ?? (await this.tokens.get());
      } catch (error) {
        throw markNeverSent(error);
      }
      first = undefined;
      const headers = { 'X-SERVICE-TOKEN': token, 'Content-Type': 'application/json', 'User-Agent': this.options.userAgent };
      const raw = await this.inner.send('POST', this.url(p, query), headers, text, signal);
      if (raw.status === 401 && !renewed) {
        // The token expired or was revoked: a 401 did nothing, so renew once and send again.
        renewed = true;
        this.tokens.invalidate(token);
        return 'again';
      }
      status = raw.status;
      return raw;
    }, signal);
    return { status, body };
  }

  /** `post`, with the answer parsed by `schema`. */
  async postParsed<S extends z.ZodType>(path: string, schema: S, call: LegacyCall = {}): Promise<z.output<S>> {
    const { body } = await this.post(path, call);
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ResponseShapeError(`${issue?.path.join('.') || 'body'}: ${issue?.message}`, {
        method: 'POST',
        path: `/api/${this.options.version}/${normalisePath(path)}`,
      });
    }
    return parsed.data;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** A full window's wait in the legacy interface's words: `waiting 58.6 s: 60 legacy requests per hour reached`. */
function windowMessage(event: WaitEvent, limits: { request: WindowOption; token: WindowOption } | null): string {
  const window = event.reason === 'token-limit' ? limits?.token : limits?.request;
  if (!window) return event.message;
  const per = window.windowMs === 3_600_000 ? 'hour' : `${window.windowMs / 1000} s`;
  const what = event.reason === 'token-limit' ? 'tokens' : 'requests';
  return `waiting ${(event.waitMs / 1000).toFixed(1)} s: ${window.limit} legacy ${what} per ${per} reached`;
}
