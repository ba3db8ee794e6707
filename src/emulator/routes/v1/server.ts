/**
 * The legacy interface `/api/v1.0|v1.1|v1.2/...` (api-v1-legacy.md; wire-format.md, Legacy v1.x),
 * served beside v2 over the same companies, clock and maintenance window.
 *
 * Order of checks: maintenance (503), version and path (404), method (405, Allow: POST), the token
 * operation, `X-SERVICE-TOKEN` (401), the hourly request window (429), injected faults, the body
 * (400), then the operation. Every error body is `{"status": "NG", "errors": [...]}`.
 *
 * The control API's API faults apply as they do to v2, matched against the whole path
 * (`/api/v1.2/user/add`, so `path_contains: "/api/v1"` singles out the legacy interface): 500/502/
 * 503/429 before the service handles the request, 504 after it did (the answer is lost), resets,
 * truncations, latency and bandwidth on the answer; `task_error_rate` makes an update's task end
 * ERROR, having changed nothing.
 *
 * Choices where both documents are silent:
 * - v1 tokens are their own: a v2 access token is not an `X-SERVICE-TOKEN`, nor the reverse.
 * - Token requests count against the 5-tokens window only, not against the 60 requests an hour;
 *   refusals before the token check (404, 405, 401) count against neither, since the service
 *   cannot tell whose they are. A 400 counts: it reached the company's API.
 * - A wrong consumer key or secret is 401 and takes no token slot.
 * - The body is read whole before any answer, so an early refusal never cuts an upload.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { EmulatorHost } from '../../host.js';
import { TokenRegistry, type Company } from '../../company.js';
import { HttpError } from '../../http-error.js';
import { sendBody, json, type SendOptions } from '../../send.js';
import { header, safeEqual } from '../../request-checks.js';
import { closeLingering, readBody } from '../../request-body.js';
import { MAX_REQUEST_BYTES } from '../../../spec/limits.js';
import { LEGACY_TOKEN_LIFETIME_SECONDS, legacyState } from './state.js';
import { findLegacyRoute, LEGACY_VERSIONS } from './routes.js';
import { parseLegacyBody, refuse, type LegacyVersion } from './context.js';

/** `/api/v1.x/...`, and `/api/v1/...` so that a version spelt without its minor gets the legacy 404. */
export const LEGACY_PATH = /^\/api\/(v1(?:\.\d+)?)(\/.*)?$/;

const tokenBodySchema = z.strictObject({
  consumer_key: z.string({ error: 'must be a string' }),
  consumer_secret: z.string({ error: 'must be a string' }),
});

export class LegacyApi {
  /** Separate from v2's tokens, with the same one-hour lifetime on the service clock. */
  private readonly tokens: TokenRegistry;

  constructor(private readonly emulator: EmulatorHost) {
    this.tokens = new TokenRegistry(emulator.clock);
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    try {
      await this.serve(req, res, url);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      // A body refused before its end (413, 408): the connection closes once the answer is read.
      if (!req.complete) {
        closeLingering(req);
        req.resume();
      }
      await this.answer(res, error.status, { status: 'NG', errors: error.errors }, error.headers);
    }
  }

  private async serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const raw = await readBody(req, MAX_REQUEST_BYTES, this.emulator.bodyTimeouts);
    const m = LEGACY_PATH.exec(url.pathname)!;
    const version = m[1] as LegacyVersion;
    const path = m[2] ?? '/';

    const token = header(req, 'x-service-token');
    const company = token ? this.tokens.lookup(token) : undefined;
    if (company ? this.emulator.inMaintenance(company) : this.emulator.companies.every((c) => this.emulator.inMaintenance(c))) {
      throw this.maintenance();
    }
    const found = LEGACY_VERSIONS.includes(version) ? findLegacyRoute(version, path) : null;
    if (!found) throw refuse(404, `no such path: ${url.pathname}${LEGACY_VERSIONS.includes(version) ? '' : ` (versions: ${LEGACY_VERSIONS.join(', ')})`}`);
    if (method !== 'POST') throw new HttpError(405, `method ${method} is not allowed on ${url.pathname}; every legacy operation is POST`, { Allow: 'POST' });

    const latency = this.emulator.apiFaults.latencyMs(method, url.pathname);
    if (latency) await new Promise((r) => setTimeout(r, latency));
    if (!found.route.handler) return this.issueToken(req, res, url, parseJson(raw, header(req, 'content-type')));

    if (!token) throw refuse(401, 'the X-SERVICE-TOKEN header is missing; get a token from /get_token first');
    if (!company) throw refuse(401, 'the access token is not valid or has expired; get a new one from /get_token');
    company.stats.count(found.route.key);
    const state = legacyState(company);
    const now = this.emulator.clock.now();
    const wait = state.requestWindow.retryAfterSeconds(now);
    if (wait) {
      company.stats.rate_limited += 1;
      throw new HttpError(429, `more than ${state.requestWindow.limit} requests in an hour`, { 'Retry-After': this.emulator.retryAfter(wait) });
    }
    const fault = this.emulator.apiFaults.decide(method, url.pathname);
    // Answered before the service handles it: the request did nothing and takes no slot.
    if (fault.kind === 'error' && fault.status !== 504) throw refuse(fault.status, `server error ${fault.status} (injected)`);
    if (fault.kind === 'upload-reset') return void req.socket.resetAndDestroy();
    state.requestWindow.take(now);

    const send: SendOptions = { fault, bandwidth: this.emulator.apiFaults.bandwidth(method, url.pathname) };
    let status: number;
    let answer: unknown;
    let headers: Record<string, string> = {};
    try {
      const { dryrun, ...rest } = parseJson(raw, header(req, 'content-type'));
      const dryRun = parseDryRun(url.searchParams.get('dryrun'), dryrun);
      await company.tasks.tick();
      const taskFails = (): boolean => this.emulator.apiFaults.failsTask(method, url.pathname);
      const result = await found.route.handler({ company, version, params: found.params, body: rest, dryRun, taskFails });
      status = result.status ?? 200;
      answer = result.body;
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      status = error.status;
      answer = { status: 'NG', errors: error.errors };
      headers = error.headers;
    }
    // A gateway timeout: the service did the work, the client never hears of it.
    if (fault.kind === 'error') throw refuse(fault.status, `gateway timeout ${fault.status} (injected)`);
    await this.answer(res, status, answer, headers, send);
  }

  private async issueToken(req: IncomingMessage, res: ServerResponse, url: URL, body: Record<string, unknown>): Promise<void> {
    const { dryrun: _ignored, ...rest } = body;
    const sent = parseLegacyBody(tokenBodySchema, rest);
    const company = this.emulator.companies.find((c) => c.settings.consumerKey === sent.consumer_key);
    if (company) company.stats.count('POST /v1/get_token');
    if (company ? this.emulator.inMaintenance(company) : this.emulator.companies.every((c) => this.emulator.inMaintenance(c))) {
      throw this.maintenance();
    }
    if (!company || !safeEqual(sent.consumer_secret, company.settings.consumerSecret)) {
      throw refuse(401, 'the consumer key or consumer secret is not valid');
    }
    const state = legacyState(company);
    const now = this.emulator.clock.now();
    const wait = state.tokenWindow.retryAfterSeconds(now);
    if (wait) {
      company.stats.rate_limited += 1;
      throw new HttpError(429, `more than ${state.tokenWindow.limit} tokens issued in 60 minutes`, { 'Retry-After': this.emulator.retryAfter(wait) });
    }
    const fault = this.emulator.apiFaults.decide(req.method ?? 'POST', url.pathname);
    if (fault.kind === 'error' && fault.status !== 504) throw refuse(fault.status, `server error ${fault.status} (injected)`);
    state.tokenWindow.take(now);
    company.stats.tokens_issued += 1;
    const issued = this.tokens.issue(company);
    if (fault.kind === 'error') throw refuse(fault.status, `gateway timeout ${fault.status} (injected)`);
    // wire-format.md: `expires_in` is a string of seconds.
    await this.answer(res, 200, { access_token: issued.token, expires_in: String(LEGACY_TOKEN_LIFETIME_SECONDS) }, {}, { fault });
  }

  /** Forgets the v1 tokens of a company, as a reset forgets its v2 tokens. */
  forget(company: Company): void {
    this.tokens.forget(company);
  }

  private maintenance(): HttpError {
    const retryAfter = this.emulator.retryAfter(this.emulator.maintenanceRetryAfter());
    return new HttpError(503, 'the service is under maintenance (daily backup 01:00-01:30)', { 'Retry-After': retryAfter });
  }

  private async answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, send: SendOptions = {}): Promise<void> {
    const all = { Date: new Date(this.emulator.clock.now()).toUTCString(), 'Content-Type': 'application/json', ...headers };
    await sendBody(res, status, all, json(body), send);
  }
}

/** `dryrun` from the query or the body: absent or 0 production, 1 dry-run, anything else 400. */
function parseDryRun(query: string | null, body: unknown): boolean {
  const values = [query, body].filter((v) => v !== null && v !== undefined);
  let dry = false;
  for (const value of values) {
    const text = typeof value === 'number' || typeof value === 'string' ? String(value).trim() : undefined;
    if (text !== '0' && text !== '1') throw refuse(400, `dryrun must be 0 or 1, got ${JSON.stringify(value)}`);
    if (text === '1') dry = true;
  }
  return dry;
}

function parseJson(raw: Buffer, contentType: string | undefined): Record<string, unknown> {
  if (raw.length === 0) return {};
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw refuse(400, `the request body must be JSON with Content-Type: application/json, got "${type || 'none'}"`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw refuse(400, `the request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw refuse(400, 'the request body must be a JSON object');
  return parsed as Record<string, unknown>;
}

