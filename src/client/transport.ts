/**
 * One `send` for every API call, with auth, limits and retries as layers around it (undici's
 * composable-handler idea). Retry policy (issue 3): 429 and 503 wait (Retry-After) and retry;
 * 500, 502, 504 and network errors are retried with backoff for reads; an update request is retried
 * only when it provably did not reach the service (connection refused, a body not sent to its end,
 * 429, 503), never after a 504 or a cut answer, because its task may exist.
 */
import { Readable } from 'node:stream';
import { request, Agent, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { API_PREFIX, operation, operationPath, type OperationId } from '../spec/operations.js';
import { redact } from '../util/redact.js';
import {
  apiErrorFor, WdsError, MaintenanceError, NetworkError, OptionsError, RateLimitError, RedirectError, ResponseShapeError,
  BodyItemError, RequestBodyError, ServerError, TimeoutError, UpdateOutcomeUnknownError, WrongBaseUrlError, type ErrorDetails,
} from './errors.js';
import type { Limiter, Slot, WaitEvent } from './limiter.js';
import { WaitMeter } from './wait-meter.js';
import { entryPassesQuickly, passesQuickly } from './quick-checks.js';
import { JsonItemReader } from './json-items.js';
import { CERTIFICATE_REFUSED, certificateRefusedMessage } from './tls-errors.js';
import type { TokenManager } from './auth.js';
import type { ResolvedOptions } from './options.js';
import { backoffDelay, parseRetryAfter, sleep, untilAborted } from './retry.js';
import type { WindowName } from './window-store.js';

/** One call of {@link WdsClient.call}: its path parameters, query and body. */
export interface CallOptions {
  /** Values of the operation's path parameters, such as `{ sheet_id: 12 }`. */
  params?: Record<string, string | number>;
  /** Query parameters; those undefined are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  /** The JSON body. */
  body?: unknown;
  /** Overrides the client's dryRun for this call (operations with a dry-run mode only). */
  dryRun?: boolean;
  /** Stops the call, and its waits for the limits and retries. */
  signal?: AbortSignal;
  /**
   * Stops the call only while it is not on its way: its wait for the limits, or before it is sent
   * again after the service refused it (429, 503) or it never left, ends with the signal's reason.
   * A request already sent is not cut, so an update's outcome stays known.
   */
  stopBeforeSending?: AbortSignal;
  /**
   * A JSON body produced piece by piece (large uploads: memory stays bounded). A factory, because a
   * retried request needs the body again from its start. Takes the place of `body`.
   */
  bodyStream?: () => AsyncIterable<Uint8Array>;
  /** Sees the headers of the successful answer (the lister reads `Date` to place URL deadlines). */
  onHeaders?: (headers: Record<string, string | string[] | undefined>) => void;
  /**
   * Hands each element of the successful JSON answer's array `key` to `item` as it arrives, and
   * leaves that array empty in the answer: a listing's files are not held as one text and one
   * array. `start` is given the answer's headers before its first element, at each attempt: a
   * read cut short and sent again hands the elements over again from the first.
   */
  items?: StreamedItems;
}

/** See CallOptions.items. */
export interface StreamedItems {
  /** The answer's top-level key whose array is streamed, e.g. `member_data`. */
  key: string;
  /** Called with the answer's headers before its first element. */
  start: (headers: Record<string, string | string[] | undefined>) => void;
  /** Called with each element of that array, in order, as it arrives. */
  item: (value: unknown) => void;
}

/**
 * `items` whose elements are checked against the element schema of `schema`'s array `key` before
 * `item` sees them; the first that fails stops the handing over, and `problem` says why.
 */
function checkedItems(items: StreamedItems, schema: z.ZodType | undefined): StreamedItems & { problem: () => string | null } {
  let problem: string | null = null;
  let index = 0;
  const shape = (schema as unknown as { shape?: Record<string, { element?: z.ZodType }> } | undefined)?.shape;
  const element = shape?.[items.key]?.element;
  return {
    key: items.key,
    start: (headers) => {
      problem = null;
      index = 0;
      items.start(headers);
    },
    item: (value) => {
      if (problem !== null) return;
      const at = index++;
      if (schema && !entryPassesQuickly(schema, value) && element) {
        const parsed = element.safeParse(value);
        if (!parsed.success) {
          const first = parsed.error.issues[0];
          problem = `${[items.key, at, ...(first?.path ?? [])].join('.')}: ${first?.message}`;
          return;
        }
      }
      items.item(value);
    },
    problem: () => problem,
  };
}

/** Error codes that prove the request never reached the service. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_SSL_WRONG_VERSION_NUMBER']);
const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
/** OpenSSL's code when the other side answered the handshake with plain HTTP: sending again cannot help. */
const PLAIN_HTTP_PEER = 'ERR_SSL_WRONG_VERSION_NUMBER';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * The statuses the service answers (api-v2.md 7, and 413 for a body over its limit); 502 is a
 * gateway's before it, retried as 500 and 504 are. Any other status comes from something else.
 */
const SERVICE_STATUSES = new Set([400, 401, 403, 404, 405, 413, 429, 500, 502, 503, 504]);

/**
 * Errors of attempts that stopped before their request left (its token could not be had, or it
 * was stopped first): their slot in the limit windows is given back, as the service counted nothing.
 */
const neverSent = new WeakSet<object>();

/** Marks the error of an attempt that stopped before its request left; answers the error. */
export function markNeverSent(error: unknown): unknown {
  if (error && typeof error === 'object') neverSent.add(error);
  return error;
}

/** What one request of {@link Transport.withRetries} is, for its limits and its errors. */
export interface RequestTarget {
  method: string;
  /** The path errors and log lines name (under `/api/v2.0` for API v2). */
  path: string;
  /** The whole URL, query left out: redirects are told against it. */
  url: string;
  /** The limit windows it takes a slot in. */
  windows: WindowName[];
  /** An update: never sent again once it may have reached the service. */
  mutating: boolean;
  /** A path the API always has (no id in it): a 404 there means the base URL is wrong. */
  fixedPath?: boolean;
}

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/**
 * A request that failed while its streamed body was still being handed over: the service never
 * had the whole body, so it cannot have acted on it. A server that refuses early (429, 503) and
 * closes the connection at once makes the rest of the upload fail this way.
 */
class BodyNotSent extends Error {
  constructor(readonly original: unknown) {
    super('the request body was not sent to its end');
  }
}

function errorCode(error: unknown): string {
  const e = error as { code?: string; cause?: { code?: string } };
  return e?.code ?? e?.cause?.code ?? '';
}

/** Whether a failed attempt provably never reached the service (so the service counted nothing). */
function provedUnsent(thrown: unknown): boolean {
  const error = thrown instanceof BodyNotSent ? thrown.original : thrown;
  const code = errorCode(error);
  return (!!error && typeof error === 'object' && neverSent.has(error)) || NOT_SENT.has(code) || CERTIFICATE_REFUSED.has(code);
}

export class Transport {
  readonly dispatcher: Dispatcher;
  /**
   * Updates go on fresh connections (keep-alive off): a kept-alive socket that the server closed
   * meanwhile would fail an update in a way that cannot be told from a lost answer, while a fresh
   * connection that is refused proves the request never left. Five updates a minute make the
   * extra handshakes free.
   */
  readonly updateDispatcher: Dispatcher;
  /** The pools this transport made, and closes; those given in the options stay open. */
  private readonly owned: Dispatcher[] = [];

  private own(dispatcher: Dispatcher): Dispatcher {
    this.owned.push(dispatcher);
    return dispatcher;
  }

  private readonly meter: WaitMeter;
  /**
   * Whether anything ever answered from the base URL. A refused connection before that is a wrong
   * address or a service that is down, and is said at once; after it, a restart, and retried.
   */
  private answered = false;
  /**
   * Counters for reports: requests sent, by outcome, and `waitedMs`, the time held back by the
   * limits, Retry-After and backoff (overlapping waits counted once).
   */
  readonly counters: { requests: number; retries: number; rateLimited: number; readonly waitedMs: number };

  constructor(
    private readonly options: ResolvedOptions,
    private readonly limiter: Limiter | null,
    private readonly tokens: () => TokenManager,
    meter?: WaitMeter,
  ) {
    const waits = (this.meter = meter ?? new WaitMeter());
    this.counters = {
      requests: 0, retries: 0, rateLimited: 0,
      get waitedMs() {
        return waits.totalMs;
      },
    };
    this.dispatcher = options.dispatcher ?? this.own(new Agent({ connections: options.connections, keepAliveTimeout: 10_000 }));
    this.updateDispatcher = options.updateDispatcher ?? options.dispatcher ?? this.own(new Agent({ connections: options.connections, pipelining: 0 }));
  }

  /**
   * Aborted by close(): a token still being issued then (a stopped run's calls left their wait for
   * it) is cut, instead of the close waiting for its answer, or for the token window's hour.
   */
  private readonly closing = new AbortController();

  async close(): Promise<void> {
    this.closing.abort(new Error('the client was closed'));
    await Promise.all(this.owned.map((dispatcher) => dispatcher.close()));
  }

  private log(level: 'debug' | 'info' | 'warn', message: string): void {
    this.options.logger?.[level](redact(message));
  }

  private async wait(event: WaitEvent, signal?: AbortSignal): Promise<void> {
    this.options.onWait?.(event);
    this.log('info', event.message);
    const endWait = this.meter.begin();
    try {
      await sleep(event.waitMs, signal);
    } finally {
      endWait();
    }
  }

  /** @internal One request and its answer, read whole (the legacy client sends through it too). */
  async send(method: string, url: string, headers: Record<string, string>, body: string | Readable | undefined, signal?: AbortSignal, items?: StreamedItems): Promise<RawAnswer> {
    this.counters.requests += 1;
    const started = Date.now();
    // The path alone: the query and the headers are left out of the line, so it names no secret.
    const line = `${method} ${new URL(url).pathname}`;
    // Stopped before it left: nothing reached the service.
    if (signal?.aborted) throw markNeverSent(signal.reason);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        dispatcher: method === 'GET' ? this.dispatcher : this.updateDispatcher,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
        signal,
      });
    } catch (error) {
      this.log('debug', `${line} failed after ${Date.now() - started} ms: ${(error as Error).message}`);
      throw error;
    }
    this.answered = true;
    const type = String(res.headers['content-type'] ?? '');
    if (items && res.statusCode >= 200 && res.statusCode < 300 && type.includes('json')) {
      const reader = new JsonItemReader(items.key, items.item);
      items.start(res.headers);
      let parsed: unknown;
      try {
        for await (const chunk of res.body) reader.push(chunk as Buffer);
        parsed = reader.end();
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        // Not JSON after all: the schema's check of the answer says what is wrong with it.
        await res.body.dump().catch(() => undefined);
        parsed = '';
      }
      this.log('debug', `${line} ${res.statusCode} ${Date.now() - started} ms`);
      return { status: res.statusCode, headers: res.headers, body: parsed };
    }
    const text = await res.body.text();
    this.log('debug', `${line} ${res.statusCode} ${Date.now() - started} ms`);
    let parsed: unknown = text;
    // wire-format.md: a proxy or maintenance page may answer plain text; read JSON only when said.
    if (type.includes('json') && text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: res.statusCode, headers: res.headers, body: parsed };
  }

  /** Issues a token: retried on network errors, 5xx, 429 and 503 (a lost answer costs one token). */
  async requestToken(credentials: string): Promise<unknown> {
    const url = `${this.options.baseUrl}${API_PREFIX}/token`;
    const headers = {
      Authorization: `Basic ${credentials}`,
      'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8',
      'User-Agent': this.options.userAgent,
    };
    const closing = this.closing.signal;
    const target: RequestTarget = { method: 'POST', path: '/token', url, windows: ['token'], mutating: false, fixedPath: true };
    const answer = await this.withRetries(target, async () => this.send('POST', url, headers, 'grant_type=client_credentials', closing), closing);
    this.checkTokenAnswer(target, answer);
    return answer;
  }

  /**
   * @internal A token request answered 2xx without a token: a web server or another API that
   * takes any POST, not the service (the legacy client's token too).
   */
  checkTokenAnswer(target: RequestTarget, answer: unknown): void {
    const token = (answer as { access_token?: unknown } | null)?.access_token;
    if (typeof token === 'string' && token) return;
    const what = typeof answer === 'string' ? (isHtml(answer) ? 'an HTML page' : 'text') : 'JSON that holds no access_token';
    throw new WrongBaseUrlError(this.options.baseUrl, `${target.method} ${pathOf(target.url)} answered ${what} instead of a token`, { method: target.method, path: target.path });
  }

  /** One operation of the service, parsed with `schema` when given. */
  async call<T = unknown>(id: OperationId, call: CallOptions = {}, schema?: z.ZodType<T>): Promise<T> {
    const op = operation(id);
    // The client issues its tokens itself: sent this way, the token would go to the token endpoint.
    if (op.kind === 'token') throw new OptionsError(`the client gets its tokens itself; ${id} cannot be called through call`);
    const path = operationPath(id, call.params);
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined) query.set(k, String(v));
    const url = `${this.options.baseUrl}${API_PREFIX}${path}${query.size ? `?${query}` : ''}`;
    const dryRun = op.dryRun && (call.dryRun ?? this.options.dryRun);
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const windows: WindowName[] = op.kind === 'task' ? ['request', 'update'] : ['request'];
    const mutating = op.method !== 'GET';
    let renewed = false;
    // The token first: a slot's stamp is taken when the limiter lets the request go, and issuing a
    // token between that and the send would make the request arrive later than the stamp says. A
    // stop ends the wait for it (the token window's hour, or a slow answer), as it ends the limiter's.
    const waits = call.signal && call.stopBeforeSending ? AbortSignal.any([call.signal, call.stopBeforeSending]) : call.signal ?? call.stopBeforeSending;
    waits?.throwIfAborted();
    let first: string | undefined = await untilAborted(this.tokens().get(), waits);
    const items = call.items ? checkedItems(call.items, schema) : undefined;
    const target: RequestTarget = { method: op.method, path, url: url.split('?')[0]!, windows, mutating, fixedPath: !op.path.includes(':') };
    const answer = await this.withRetries(target, async () => {
      let token: string;
      try {
        token = first ?? (await this.tokens().get());
      } catch (error) {
        throw markNeverSent(error);
      }
      first = undefined;
      const headers: Record<string, string> = { 'Service-Token': token, 'User-Agent': this.options.userAgent };
      if (body !== undefined || call.bodyStream) headers['Content-Type'] = 'application/json';
      if (dryRun) headers['Dry-Run'] = '1';
      const streamed: BodyState | undefined = call.bodyStream ? { done: false } : undefined;
      const payload = call.bodyStream ? Readable.from(drained(call.bodyStream(), streamed!), { objectMode: false }) : body;
      let raw: RawAnswer;
      try {
        raw = await this.send(op.method, url, headers, payload, call.signal, items);
      } catch (error) {
        if (streamed?.failed) {
          const failed = streamed.failed;
          const item = failed instanceof BodyItemError ? { index: failed.index, reason: failed.reason } : undefined;
          throw new RequestBodyError((failed as Error)?.message ?? String(failed), { method: op.method, path }, item);
        }
        throw streamed && !streamed.done ? new BodyNotSent(error) : error;
      }
      if (raw.status >= 200 && raw.status < 300) call.onHeaders?.(raw.headers);
      if (raw.status === 401 && !renewed) {
        // The token expired early or was revoked: renew once and repeat (a 401 did nothing).
        renewed = true;
        this.tokens().invalidate(token);
        return 'again';
      }
      return raw;
    }, call.signal, call.stopBeforeSending);
    const itemProblem = items?.problem();
    if (itemProblem) throw new ResponseShapeError(itemProblem, { method: op.method, path });
    if (!schema) return answer as T;
    if (passesQuickly(schema, answer)) return answer as T;
    const parsed = schema.safeParse(answer);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      throw new ResponseShapeError(`${first?.path.join('.') || 'body'}: ${first?.message}`, { method: op.method, path });
    }
    return parsed.data;
  }

  /** @internal `attemptOnce` under the limits and the retry policy (the legacy client's calls too). */
  async withRetries(
    target: RequestTarget,
    attemptOnce: () => Promise<RawAnswer | 'again'>,
    signal?: AbortSignal,
    stopBeforeSending?: AbortSignal,
  ): Promise<unknown> {
    const { method, path, windows, mutating } = target;
    const policy = this.options.retry;
    const waits = signal && stopBeforeSending ? AbortSignal.any([signal, stopBeforeSending]) : signal ?? stopBeforeSending;
    let failures = 0;
    let limited = 0;
    for (;;) {
      const slot = await this.limiter?.acquire(windows, waits);
      let raw: RawAnswer | 'again';
      try {
        raw = await this.settling(slot, attemptOnce);
      } catch (thrown) {
        // Errors of ours (a token that could not be issued) are final here; only the wire's are retried.
        if (thrown instanceof WdsError || (signal?.aborted ?? false)) throw thrown;
        const unsent = thrown instanceof BodyNotSent;
        const error = unsent ? thrown.original : thrown;
        const code = errorCode(error);
        const details: ErrorDetails = { method, path, cause: error };
        if (code === PLAIN_HTTP_PEER) throw plainHttpPeer(target.url, this.options.baseUrl, details);
        if (CERTIFICATE_REFUSED.has(code)) throw certificateRefused(target.url, code, error, details);
        if (code === 'ECONNREFUSED' && !this.answered) throw refusedAtFirst(target.url, this.options.baseUrl, details);
        if (mutating && !unsent && !NOT_SENT.has(code)) throw new UpdateOutcomeUnknownError(details);
        failures += 1;
        if (failures >= policy.maxAttempts) {
          throw TIMEOUTS.has(code)
            ? new TimeoutError(`no answer within ${this.options.timeoutMs} ms`, details)
            : new NetworkError(`${code || 'error'}: ${(error as Error).message}`, details);
        }
        const waitMs = backoffDelay(failures, policy);
        this.counters.retries += 1;
        await this.wait({ reason: 'retry', waitMs, message: `${method} ${path}: ${code || (error as Error).message}; retrying in ${waitMs} ms` }, waits);
        continue;
      }
      if (raw === 'again') continue;
      const page = htmlPage(raw);
      if (raw.status >= 200 && raw.status < 300) {
        if (page === null) return raw.body;
        throw new WrongBaseUrlError(this.options.baseUrl, `${method} ${pathOf(target.url)} answered ${raw.status} with ${page}, not the API's JSON`, { method, path, status: raw.status });
      }

      const errors = extractErrors(raw.body);
      const retryAfterMs = parseRetryAfter(raw.headers['retry-after']);
      const details = { method, path, status: raw.status, errors, retryAfterMs };
      if (raw.status === 429 || raw.status === 503) {
        // Neither did anything: safe to send again, update or not.
        if (raw.status === 429) this.counters.rateLimited += 1;
        limited += 1;
        const waitMs = retryAfterMs ?? backoffDelay(limited, policy);
        if (limited > 10 || waitMs > policy.maxRetryAfterMs) {
          throw raw.status === 429 ? new RateLimitError(details) : new MaintenanceError(details);
        }
        this.counters.retries += 1;
        await this.wait({
          reason: raw.status === 429 ? 'rate-limited' : 'maintenance',
          waitMs,
          message: `${method} ${path}: ${raw.status === 429 ? 'rate limited (429)' : 'service unavailable (503)'}; waiting ${(waitMs / 1000).toFixed(1)} s`,
        }, waits);
        continue;
      }
      if (raw.status === 500 || raw.status === 502 || raw.status === 504) {
        if (mutating) throw new UpdateOutcomeUnknownError(details);
        failures += 1;
        if (failures >= policy.maxAttempts) throw new ServerError(details);
        const waitMs = backoffDelay(failures, policy);
        this.counters.retries += 1;
        await this.wait({ reason: 'retry', waitMs, message: `${method} ${path}: ${raw.status}; retrying in ${waitMs} ms` }, waits);
        continue;
      }
      if (REDIRECTS.has(raw.status)) throw redirectError(target, this.options.baseUrl, raw.headers.location, details);
      if (raw.status === 404 && (target.fixedPath || !isServiceError(raw.body))) {
        const why = target.fixedPath
          ? `${method} ${pathOf(target.url)} answered 404${page ? ` with ${page}` : ''}, and the API always has that path`
          : `${method} ${pathOf(target.url)} answered 404 without the service's JSON error, so something other than the API answered`;
        throw new WrongBaseUrlError(this.options.baseUrl, why, { ...details, status: 404 });
      }
      // The service answers its errors in JSON and with its own statuses: an HTML page (a web
      // server's, a login page) or another status (501 from a static server) is not the API.
      if (page !== null || !SERVICE_STATUSES.has(raw.status)) {
        const said = page ?? (isServiceError(raw.body) ? 'a status the API never answers' : "no error of the service's");
        throw new WrongBaseUrlError(this.options.baseUrl, `${method} ${pathOf(target.url)} answered ${raw.status} with ${said}, so something other than the API answered`, { method, path, status: raw.status });
      }
      throw apiErrorFor(raw.status, details);
    }
  }

  /**
   * The attempt, its slot stamped again once it is answered or given up (the service counted it by
   * then), or given back when the attempt provably never reached the service.
   */
  private async settling<T>(slot: Slot | undefined, attempt: () => Promise<T>): Promise<T> {
    let reached = true;
    try {
      return await attempt();
    } catch (error) {
      reached = !provedUnsent(error);
      throw error;
    } finally {
      if (slot) await (reached ? this.limiter!.settle(slot) : this.limiter!.release(slot));
    }
  }
}

interface BodyState {
  /** The last chunk was taken. */
  done: boolean;
  /** What the body's own source threw, if it did. */
  failed?: unknown;
}

/**
 * The body's chunks, telling in `state` whether all were taken or the source failed. Only what
 * `next()` throws is the source's: a socket error reaches the generator at its `yield`.
 */
async function* drained(body: AsyncIterable<Uint8Array>, state: BodyState): AsyncIterable<Uint8Array> {
  const chunks = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await chunks.next();
      } catch (error) {
        state.failed = error ?? 'the body failed';
        throw error;
      }
      if (next.done) break;
      yield next.value;
    }
    state.done = true;
  } finally {
    if (!state.done && state.failed === undefined) await chunks.return?.();
  }
}

/** An HTML answer as it is named in a message (`an HTML page ("its title")`), never its text; null for any other. */
function htmlPage(raw: RawAnswer): string | null {
  const type = String(raw.headers['content-type'] ?? '');
  const text = typeof raw.body === 'string' ? raw.body : '';
  if (!/html/i.test(type) && !isHtml(text)) return null;
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(text)?.[1]?.replace(/\s+/g, ' ').trim().slice(0, 80);
  return title ? `an HTML page ("${title}")` : 'an HTML page';
}

const isHtml = (text: string): boolean => /^\s*<(?:!doctype\s+html|html|head|body|\?xml)/i.test(text);

/** A refused connection before anything answered: a wrong address, or a service that is down. */
function refusedAtFirst(url: string, baseUrl: string, details: ErrorDetails): NetworkError {
  const { host } = new URL(url);
  return new NetworkError(`connection refused by ${host} (ECONNREFUSED): nothing listens there; check the base URL ${baseUrl} and that the service is up`, details);
}

/** The service's error answer: JSON with an `errors` array (wire-format.md, Common; the legacy one adds `status`). */
function isServiceError(body: unknown): boolean {
  return !!body && typeof body === 'object' && Array.isArray((body as { errors?: unknown }).errors);
}

const pathOf = (url: string): string => new URL(url).pathname;

/** A server certificate Node refused (src/client/tls-errors.ts). */
function certificateRefused(url: string, code: string, error: unknown, details: ErrorDetails): NetworkError {
  return new NetworkError(certificateRefusedMessage(url, code, error), details);
}

/** https:// to a server that speaks plain HTTP: OpenSSL reads its answer as a wrong TLS version. */
function plainHttpPeer(url: string, baseUrl: string, details: ErrorDetails): NetworkError {
  const { host } = new URL(url);
  const http = baseUrl.replace(/^https:/, 'http:');
  return new NetworkError(`https:// to a server that speaks http? ${host} answered the TLS handshake in plain HTTP; if that server is the service, its base URL is ${http}`, details);
}

/** A 3xx, with the base URL it would mean when it points at the same API path elsewhere. */
function redirectError(target: RequestTarget, baseUrl: string, header: string | string[] | undefined, details: ErrorDetails): RedirectError {
  const value = Array.isArray(header) ? header[0] : header;
  let location: string | undefined;
  let suggested: string | undefined;
  try {
    if (value) location = new URL(value, target.url).href;
  } catch {
    location = value;
  }
  if (location && target.url.startsWith(baseUrl)) {
    const rest = target.url.slice(baseUrl.length);
    const bare = location.split('?')[0]!.replace(/\/+$/, '');
    if (rest && bare.endsWith(rest)) suggested = bare.slice(0, bare.length - rest.length);
  }
  return new RedirectError(location, suggested, details);
}

function extractErrors(body: unknown): string[] {
  if (body && typeof body === 'object' && Array.isArray((body as { errors?: unknown }).errors)) {
    return (body as { errors: unknown[] }).errors.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)));
  }
  // A page's text is no message: its status and title say what answered (htmlPage).
  if (typeof body === 'string' && body.trim() && !isHtml(body)) return [body.trim().slice(0, 300)];
  return [];
}
