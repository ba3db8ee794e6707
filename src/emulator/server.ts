/**
 * The emulator's HTTP server: `/api/v2.0/...` (the service), `/storage/...` (pre-signed
 * downloads) and `/_emulator/...` (control API for tests and benchmarks). Plain node:http, so that
 * status codes, cut bodies and Range answers are exactly what the emulator decides.
 *
 * Order of checks for an API request: maintenance (503), route (404/405), token (401), operation
 * enabled (403), integer ids (400), limits (429), injected faults, Dry-Run header (400), body size
 * (413) and JSON (400), then the operation. Faults come after the refusals, so that a fault limited
 * by `max_faults` is spent on a request it actually hits.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Clock } from './clock.js';
import { Company, TokenRegistry, URL_LIFETIME_MS, type CompanySettings } from './company.js';
import { Faults } from './faults.js';
import { Storage } from './storage.js';
import { WebhookDispatcher } from './webhooks.js';
import { HttpError } from './http-error.js';
import { matchRoute, badIntegerParam } from './router.js';
import { sendBody, json, jsonBody, type SendOptions } from './send.js';
import { header, safeEqual } from './request-checks.js';
import { handleControl } from './control.js';
import type { ControlledEmulator } from './host.js';
import { ROUTES } from './routes/v2/index.js';
import type { RouteContext } from './routes/context.js';
import { API_PREFIX, OPERATIONS, type OperationId, type OperationSpec } from '../spec/operations.js';
import { MAX_REQUEST_BYTES, MAINTENANCE_WINDOW } from '../spec/limits.js';
import { StateSaver } from './state-dir.js';
import { LegacyApi, LEGACY_PATH } from './routes/v1/server.js';
import { closeLingering, readBody, DEFAULT_BODY_TIMEOUTS, type BodyTimeouts } from './request-body.js';

export interface EmulatorConfig {
  companies: CompanySettings[];
  clock?: { start?: number; speed?: number; timeZone?: string };
  /** Saves data and files here and loads them on the next start. */
  stateDir?: string;
  /** Prints one line per request to stderr. */
  verbose?: boolean;
  /** How long a request body may pause and take in all before the 408 (request-body.ts). */
  bodyTimeouts?: Partial<BodyTimeouts>;
}

export class Emulator implements ControlledEmulator {
  readonly clock: Clock;
  readonly apiFaults = new Faults();
  readonly storageFaults = new Faults();
  readonly companies: Company[];
  readonly tokens: TokenRegistry;
  readonly storage: Storage;
  readonly webhooks = new WebhookDispatcher();
  private server: Server | null = null;
  private readonly sockets = new Set<import('node:net').Socket>();
  private ticker: NodeJS.Timeout | null = null;
  private readonly saver: StateSaver | null;
  /** The legacy interface `/api/v1.x` (DESIGN.md section 11), over the same companies. */
  readonly legacy: LegacyApi;
  readonly bodyTimeouts: BodyTimeouts;

  constructor(readonly config: EmulatorConfig) {
    if (!config.companies.length) throw new Error('the emulator needs at least one company');
    const names = new Set<string>();
    const keys = new Set<string>();
    for (const c of config.companies) {
      if (names.has(c.name)) throw new Error(`two companies are named "${c.name}"`);
      if (keys.has(c.consumerKey)) throw new Error(`two companies share the consumer key of "${c.name}"`);
      names.add(c.name);
      keys.add(c.consumerKey);
    }
    this.clock = new Clock(config.clock);
    this.bodyTimeouts = { ...DEFAULT_BODY_TIMEOUTS, ...config.bodyTimeouts };
    this.tokens = new TokenRegistry(this.clock);
    this.saver = config.stateDir ? new StateSaver(config.stateDir) : null;
    this.companies = config.companies.map(
      (settings) =>
        new Company(settings, this.clock, (company, event, codes) => this.webhooks.deliver(company, event, codes), this.saver?.blobDir(settings.name)),
    );
    this.storage = new Storage(randomBytes(32), this.clock, (name) => this.company(name), this.storageFaults);
    this.legacy = new LegacyApi(this);
    for (const c of ROUTES_MISSING()) throw new Error(`no emulator route handles ${c}`);
  }

  /** The company named `name`, or the first one when no name is given. */
  company(name?: string | null): Company | undefined {
    if (!name) return this.companies[0];
    return this.companies.find((c) => c.name === name);
  }

  /** Loads every company (saved state when there is one, else its seed) and listens. */
  async listen(port = 8787, host = '127.0.0.1'): Promise<string> {
    for (const company of this.companies) {
      const loaded = this.saver ? await this.saver.load(company) : false;
      if (!loaded) await company.reset();
      if (this.saver) {
        const saver = this.saver;
        company.onChange(() => saver.saveSoon(company));
        if (!loaded) saver.saveSoon(company);
      }
    }
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        console.error('[emulator] unexpected error:', error);
        if (!res.headersSent) void sendBody(res, 500, { 'Content-Type': 'application/json' }, json({ errors: ['unexpected server error'] }));
        else res.destroy();
      });
    });
    this.server.keepAliveTimeout = 65_000;
    this.server.headersTimeout = 66_000;
    this.server.requestTimeout = 0;
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    // Tasks complete on the service clock even when nobody asks (webhooks fire on completion).
    this.ticker = setInterval(() => this.tick(), 20);
    this.ticker.unref();
    const address = this.server.address() as AddressInfo;
    const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${shownHost}:${address.port}`;
  }

  private tick(): void {
    const now = this.clock.now();
    for (const company of this.companies) {
      void company.tasks.tick();
      // A released blob is kept while a URL listed before its release may still be valid.
      company.blobs.collect(now - URL_LIFETIME_MS - 60_000);
    }
  }

  async close(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    await this.webhooks.settle();
    if (this.saver) await this.saver.flush();
    const server = this.server;
    this.server = null;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
  }

  /**
   * Whether a request is answered 503. A request whose token names no company (missing or
   * expired) meets the maintenance page too when every company is in maintenance: the real
   * service shows it before looking at credentials, and a client must see 503 rather than 401.
   */
  private maintenanceFor(company: Company | undefined): boolean {
    return company ? this.inMaintenance(company) : this.companies.every((c) => this.inMaintenance(c));
  }

  inMaintenance(company: Company): boolean {
    if (!company.settings.maintenance) return false;
    const minute = this.clock.minuteOfDay();
    return minute >= MAINTENANCE_WINDOW.startMinute && minute < MAINTENANCE_WINDOW.endMinute;
  }

  /**
   * Retry-After counts real seconds (RFC 9110), while the windows run on the service clock: at
   * clock speed 60 a minute of service time is one real second.
   */
  retryAfter(serviceSeconds: number): string {
    return String(Math.max(1, Math.ceil(serviceSeconds / this.clock.speed)));
  }

  /** Service seconds until the maintenance window ends (at least 1). */
  maintenanceRetryAfter(): number {
    const now = this.clock.now();
    const minute = this.clock.minuteOfDay(now);
    const seconds = Number(this.clock.format(now).slice(17, 19));
    return Math.max(1, (MAINTENANCE_WINDOW.endMinute - minute) * 60 - seconds);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const path = url.pathname;
    if (path.startsWith('/storage/')) return this.storage.handle(req, res, url);
    if (path.startsWith('/_emulator/') || path === '/_emulator') return handleControl(this, req, res, url);
    if (path.startsWith(`${API_PREFIX}/`)) return this.handleApi(req, res, url);
    if (LEGACY_PATH.test(path)) return this.legacy.handle(req, res, url);
    await this.answer(res, 404, { errors: [`no such path: ${path}`] });
  }

  private async answer(
    res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, company?: Company, send: SendOptions = {},
  ): Promise<void> {
    const payload = body === undefined ? Buffer.alloc(0) : jsonBody(body);
    const all: Record<string, string> = { Date: new Date(this.clock.now()).toUTCString(), ...headers };
    if (body !== undefined) all['Content-Type'] = 'application/json';
    if (status === 429 && company) company.stats.rate_limited += 1;
    await sendBody(res, status, all, payload, send);
  }

  private async handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const apiPath = url.pathname.slice(API_PREFIX.length);
    const match = matchRoute(method, apiPath);
    const routeKey = match.kind === 'found' ? `${method} ${match.op.path}` : `${method} ${apiPath}`;

    const latency = this.apiFaults.latencyMs(method, apiPath);
    if (latency) await new Promise((r) => setTimeout(r, latency));

    // The token names the company; token issuance names it by its key.
    if (match.kind === 'found' && match.op.id === 'token.issue') return this.issueToken(req, res, method, apiPath);
    const token = header(req, 'service-token');
    const company = token ? this.tokens.lookup(token) : undefined;
    company?.stats.count(routeKey);

    if (this.maintenanceFor(company)) {
      drain(req);
      return this.answer(res, 503, { errors: ['the service is under maintenance (daily backup 01:00-01:30)'] }, { 'Retry-After': this.retryAfter(this.maintenanceRetryAfter()) });
    }
    if (match.kind === 'none') {
      drain(req);
      return this.answer(res, 404, { errors: [`no such path: ${url.pathname}`] });
    }
    if (match.kind === 'method') {
      drain(req);
      return this.answer(res, 405, { errors: [`method ${method} is not allowed on ${url.pathname}`] }, { Allow: match.allow.join(', ') });
    }
    const op = match.op;
    if (!token) {
      drain(req);
      return this.answer(res, 401, { errors: ['the Service-Token header is missing'] });
    }
    if (!company) {
      drain(req);
      return this.answer(res, 401, { errors: ['the access token is not valid or has expired; issue a new one'] });
    }
    if (!company.isEnabled(op.id as OperationId)) {
      drain(req);
      return this.answer(res, 403, { errors: [`the operation ${op.id} is not enabled for API v2; switch it on in the administrator screen`] });
    }
    const badParam = badIntegerParam(match.params);
    if (badParam) {
      drain(req);
      return this.answer(res, 400, { errors: [`${badParam[0]} must be a positive integer, got "${badParam[1]}"`] });
    }
    const limited = this.checkLimits(company, op);
    if (limited) {
      drain(req);
      return this.answer(res, 429, { errors: [limited.message] }, { 'Retry-After': this.retryAfter(limited.retryAfter) }, company);
    }
    const fault = this.apiFaults.decide(method, apiPath);
    if (fault.kind === 'error' && fault.status !== 504) {
      // Answered before the service handles it: the request did nothing and takes no slot.
      drain(req);
      return this.answer(res, fault.status, { errors: [`server error ${fault.status} (injected)`] }, {}, company);
    }
    if (fault.kind === 'upload-reset') return void req.socket.resetAndDestroy();
    this.countRequest(company, op);

    // Resets, truncations and bandwidth apply to what the service answers, success or not.
    const send: SendOptions = { fault, bandwidth: this.apiFaults.bandwidth(method, apiPath) };
    try {
      const dryRun = parseDryRun(req, op);
      const body = await readJsonBody(req, method, this.bodyTimeouts);
      await company.tasks.tick();
      const ctx: RouteContext = {
        company, storage: this.storage, op, params: match.params, query: url.searchParams, body, dryRun,
        baseUrl: `http://${req.headers.host ?? 'localhost'}`,
        taskFails: () => this.apiFaults.failsTask(method, apiPath),
      };
      const result = await ROUTES[op.id as keyof typeof ROUTES]!(ctx);
      if (fault.kind === 'error') return this.answer(res, fault.status, { errors: [`gateway timeout ${fault.status} (injected)`] });
      await this.answer(res, result.status ?? 200, result.body, {}, company, send);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      if (error.status === 413 || error.status === 408) closeLingering(req);
      drain(req);
      // The gateway gave up whatever the service went on to answer.
      if (fault.kind === 'error') return this.answer(res, fault.status, { errors: [`gateway timeout ${fault.status} (injected)`] });
      await this.answer(res, error.status, { errors: error.errors }, error.headers, company, send);
    }
  }

  /** 3,000 requests an hour, and 5 update requests a minute for task operations (api-v2.md 8). */
  private checkLimits(company: Company, op: OperationSpec): { message: string; retryAfter: number } | null {
    const now = this.clock.now();
    const hourWait = company.requestWindow.retryAfterSeconds(now);
    if (hourWait) {
      return { message: `more than ${company.requestWindow.limit} requests in an hour`, retryAfter: hourWait };
    }
    const minuteWait = op.kind === 'task' ? company.updateWindow.retryAfterSeconds(now) : 0;
    if (minuteWait) {
      return { message: `more than ${company.updateWindow.limit} update requests in a minute`, retryAfter: minuteWait };
    }
    return null;
  }

  /** Takes the request's slots in the windows that `checkLimits` found open. */
  private countRequest(company: Company, op: OperationSpec): void {
    const now = this.clock.now();
    if (op.kind === 'task') {
      company.updateWindow.take(now);
      company.stats.update_requests += 1;
    }
    company.requestWindow.take(now);
  }

  private async issueToken(req: IncomingMessage, res: ServerResponse, method: string, apiPath: string): Promise<void> {
    let body: string;
    try {
      body = (await readBody(req, 64 * 1024, this.bodyTimeouts)).toString('utf8');
    } catch (error) {
      if (error instanceof HttpError) return this.answer(res, error.status, { errors: error.errors });
      throw error;
    }
    const auth = /^Basic\s+(\S+)$/i.exec(header(req, 'authorization') ?? '');
    const decoded = auth ? Buffer.from(auth[1]!, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const key = colon > 0 ? decoded.slice(0, colon) : '';
    const secret = colon > 0 ? decoded.slice(colon + 1) : '';
    const company = this.companies.find((c) => c.settings.consumerKey === key);
    company?.stats.count('POST /token');
    if (this.maintenanceFor(company)) {
      return this.answer(res, 503, { errors: ['the service is under maintenance (daily backup 01:00-01:30)'] }, { 'Retry-After': this.retryAfter(this.maintenanceRetryAfter()) });
    }
    const type = (header(req, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      return this.answer(res, 400, { errors: ['token issuance takes a form body (Content-Type: application/x-www-form-urlencoded)'] });
    }
    const grant = new URLSearchParams(body).get('grant_type');
    if (grant !== 'client_credentials') {
      return this.answer(res, 400, { errors: [`grant_type must be client_credentials, got ${grant === null ? 'nothing' : `"${grant}"`}`] });
    }
    if (!auth) return this.answer(res, 401, { errors: ['token issuance needs an Authorization: Basic header'] });
    if (!company || !safeEqual(secret, company.settings.consumerSecret)) {
      return this.answer(res, 401, { errors: ['the consumer key or consumer secret is not valid'] });
    }
    const now = this.clock.now();
    const wait = company.tokenWindow.retryAfterSeconds(now);
    if (wait) {
      return this.answer(res, 429, { errors: [`more than ${company.tokenWindow.limit} tokens issued in an hour`] }, { 'Retry-After': this.retryAfter(wait) }, company);
    }
    const fault = this.apiFaults.decide(method, apiPath);
    if (fault.kind === 'error' && fault.status !== 504) return this.answer(res, fault.status, { errors: [`server error ${fault.status} (injected)`] });
    company.tokenWindow.take(now);
    company.stats.tokens_issued += 1;
    const issued = this.tokens.issue(company);
    if (fault.kind === 'error') return this.answer(res, fault.status, { errors: [`gateway timeout ${fault.status} (injected)`] });
    return this.answer(res, 200, { access_token: issued.token, token_type: 'Bearer', expire_in: issued.expiresIn }, {}, undefined, { fault });
  }
}

function ROUTES_MISSING(): string[] {
  return OPERATIONS.filter((op) => op.id !== 'token.issue' && !(op.id in ROUTES)).map((op) => op.id);
}

/**
 * Reads and drops the rest of a request body after an early answer (429, 503, 401...): a keep-alive
 * connection stays usable, and one that closes lets the client read the answer first.
 */
function drain(req: IncomingMessage): void {
  if (req.complete) return;
  closeLingering(req);
  req.resume();
}

/** `Dry-Run`: absent or 0 normal, 1 validate only, anything else 400 (api-v2.md 4.1). */
function parseDryRun(req: IncomingMessage, op: OperationSpec): boolean {
  const value = header(req, 'dry-run');
  if (value === undefined) return false;
  const trimmed = value.trim();
  if (trimmed !== '0' && trimmed !== '1') {
    throw new HttpError(400, `the Dry-Run header must be 0 or 1, got "${value}"`);
  }
  // wire-format.md, "Real-client facts": a read ignores 0 and 1, because a real client sends the
  // header on every request once dry-run is on. Only a write without a dry-run mode refuses 1.
  if (op.method === 'GET') return false;
  if (trimmed === '1' && !op.dryRun) {
    throw new HttpError(400, `the operation ${op.id} has no dry-run mode; send it without Dry-Run: 1`);
  }
  return trimmed === '1';
}

async function readJsonBody(req: IncomingMessage, method: string, timeouts: BodyTimeouts): Promise<unknown> {
  if (method === 'GET' || method === 'DELETE' || method === 'HEAD') {
    drain(req);
    return undefined;
  }
  const raw = await readBody(req, MAX_REQUEST_BYTES, timeouts);
  if (raw.length === 0) return undefined;
  const type = (header(req, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new HttpError(400, `the request body must be JSON with Content-Type: application/json, got "${type || 'none'}"`);
  }
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (error) {
    throw new HttpError(400, `the request body is not valid JSON: ${(error as Error).message}`);
  }
}
