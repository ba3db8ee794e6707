/**
 * The webhook receiver as a Node request handler (DESIGN.md section 15), for `webhook serve` and
 * for SDK users who mount it in their own server. A delivery is stored in the inbox, fsynced,
 * before its 2xx goes out: the service never resends (api-v2.md 6 rule 2), so an event answered
 * 2xx and then lost in a crash would be lost for good. Everything else is refused and nothing of it
 * is stored: a wrong path 404, another method 405, a missing or wrong `Service-Token` 401, another
 * content type or a body not of section 6's shape 400, a body larger than 10,000 codes need 413
 * (told by its Content-Length before any of it is read, or by counting as it streams), and 503 when
 * the inbox cannot store it (disk full, unwritable).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { MAX_WEBHOOK_CODES_PER_DELIVERY } from '../spec/limits.js';
import { describeIssues, webhookDeliverySchema } from '../spec/schemas.js';
import { TIMESTAMP_PATTERN } from '../spec/time.js';
import type { AppendResult, InboxEvent, InboxEventInput, InboxSource } from './inbox.js';

/**
 * The largest body accepted: 10,000 codes (api-v2.md 6 rule 3) of up to 64 characters of up to 3
 * bytes each, 32 bytes of JSON around each, and 1 KiB for the rest. The specification gives no
 * longest code; 64 characters is more than any employee number seen.
 */
export const MAX_DELIVERY_BYTES = MAX_WEBHOOK_CODES_PER_DELIVERY * (64 * 3 + 32) + 1024;

/** How long a refused request's unread body is drained before its connection closes. */
const LINGER_MS = 2_000;

/** Why a request was refused, as the metrics count it. */
export type RefusalReason = 'not_found' | 'method' | 'token' | 'content_type' | 'too_large' | 'shape' | 'aborted' | 'store_failed';

/** A delivery stored: the 2xx went out once its events were on disk. */
export interface DeliveryStored {
  /** `stored`. */
  outcome: 'stored';
  /** The events it brought, as stored. */
  events: InboxEvent[];
}

/** A delivery the inbox held already: answered 2xx, not stored again. */
export interface DeliveryDuplicate {
  /** `duplicate`. */
  outcome: 'duplicate';
}

/** A request refused: nothing of it was stored. */
export interface DeliveryRefused {
  /** `refused`. */
  outcome: 'refused';
  /** Why, as the metrics count it. */
  reason: RefusalReason;
  /** The HTTP status answered (401, 400, 413, 503, ...). */
  status: number;
  /** What the answer's body said. */
  message: string;
  /** For `store_failed`: why the inbox could not store it. */
  error?: Error;
}

/** What became of one request. */
export type DeliveryOutcome = DeliveryStored | DeliveryDuplicate | DeliveryRefused;

/**
 * Where accepted deliveries are stored: a {@link WebhookInbox}, or any store whose `append`
 * resolves only once the events are durable (a PostgreSQL table, for the fleet) and rejects when
 * they cannot be stored.
 */
export interface EventStore {
  /** Stores the events; resolves once they are durable, with those that were new, or rejects storing none. */
  append(events: InboxEventInput[], source: InboxSource): Promise<AppendResult>;
}

/** The stores of a receiver with a path per store: see {@link WebhookReceiverOptions.route}. */
export interface WebhookRoute {
  /** The store of a request's path, or null for a path that takes no deliveries. */
  storeOf: (pathname: string) => EventStore | null;
  /** What a 404 says: where deliveries are accepted. */
  notFound: string;
}

/** The options of {@link createWebhookReceiver}. */
export interface WebhookReceiverOptions {
  /** The secret the webhook setting was registered with, sent back in each delivery's `Service-Token`. */
  token: string;
  /** Where accepted deliveries are stored (unless `route` is given). */
  inbox?: EventStore;
  /** The path deliveries are posted to (default `/`); other paths answer 404. */
  path?: string;
  /**
   * Instead of `inbox` and `path`: the store of the path a delivery is posted to, or null for a
   * path that takes none (404, with `notFound` as the answer's message). The fleet's receiver has
   * a path per company.
   */
  route?: WebhookRoute;
  /** Called with the events newly stored (on disk already), after each delivery that brought any. */
  onEvent?: (events: InboxEvent[]) => void;
  /** Called once per request with what became of it (for metrics and logs). */
  onOutcome?: (outcome: DeliveryOutcome) => void;
}

/** A `node:http` request handler, as `createServer` and Express take it. */
export type WebhookRequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

class Refusal extends Error {
  constructor(readonly status: number, readonly reason: RefusalReason, message: string) {
    super(message);
  }
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** Creates the handler. The token is compared in constant time, whatever its length and the one sent. */
export function createWebhookReceiver(options: WebhookReceiverOptions): WebhookRequestHandler {
  if (!options.token) throw new Error('createWebhookReceiver: token must be the webhook setting\'s secret, not empty');
  if (!options.inbox && !options.route) throw new Error('createWebhookReceiver: give the inbox deliveries are stored in (or a route to the stores)');
  const expected = digest(options.token);
  const path = options.path ?? '/';
  const tokenMatches = (sent: string | string[] | undefined): boolean =>
    typeof sent === 'string' && timingSafeEqual(digest(sent), expected);

  return (req, res) => {
    void handle(req, res).then((outcome) => {
      try {
        options.onOutcome?.(outcome);
      } catch {
        // A metrics hook's failure is not the delivery's.
      }
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<DeliveryOutcome> {
    let events: InboxEvent[] | null = null;
    try {
      const pathname = new URL(req.url ?? '/', 'http://receiver').pathname;
      const store = options.route ? options.route.storeOf(pathname) : pathname === path ? options.inbox ?? null : null;
      if (!store) throw new Refusal(404, 'not_found', options.route?.notFound ?? `deliveries are accepted at ${path} only`);
      if (req.method !== 'POST') throw new Refusal(405, 'method', 'deliveries are POSTed');
      if (!tokenMatches(req.headers['service-token'])) throw new Refusal(401, 'token', 'the Service-Token header is missing or wrong');
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/json') throw new Refusal(400, 'content_type', 'the body must be Content-Type: application/json');
      const body = await readBody(req);
      const delivery = parseDelivery(body);
      let result;
      try {
        result = await store.append([delivery], 'delivery');
      } catch (error) {
        const refusal = new Refusal(503, 'store_failed', 'the delivery could not be stored; nothing was kept');
        refusal.cause = error;
        throw refusal;
      }
      events = result.stored;
      reply(res, 200, { status: events.length ? 'stored' : 'duplicate' });
    } catch (error) {
      // Only the body's stream throws anything else: the sender went away before it was sent whole.
      const refusal = error instanceof Refusal ? error : new Refusal(400, 'aborted', `the body ended early: ${(error as Error).message}`);
      reply(res, refusal.status, { error: refusal.message });
      return { outcome: 'refused', reason: refusal.reason, status: refusal.status, message: refusal.message, ...(refusal.cause instanceof Error ? { error: refusal.cause } : {}) };
    }
    if (!events.length) return { outcome: 'duplicate' };
    try {
      options.onEvent?.(events);
    } catch {
      // The events are stored; what a hook does with them is its own affair.
    }
    return { outcome: 'stored', events };
  }
}

function reply(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  if (res.headersSent || res.destroyed) return;
  const text = `${JSON.stringify(body)}\n`;
  const unread = !res.req.complete;
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...(unread ? { Connection: 'close' } : {}) });
  // Node ends a `Connection: close` answer with destroySoon, closing while the sender's bytes still arrive.
  if (unread) res.req.socket.destroySoon = () => lingeringClose(res.req.socket);
  res.end(text);
}

/**
 * Ends a connection whose request body was not read (refused before it, or too large): the answer
 * and then the end are sent, and what still arrives is thrown away for a moment before the
 * connection closes. Closing at once, with the sender's bytes still arriving, would reset the
 * connection, and a reset can make the sender lose the answer it was sent.
 */
function lingeringClose(socket: Socket): void {
  if (socket.destroyed) return;
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/** The body, refused once it is larger than a delivery can be, before the rest is read. */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  const tooLarge = (): Refusal => new Refusal(413, 'too_large', `the body is larger than ${MAX_DELIVERY_BYTES} bytes, more than a delivery of ${MAX_WEBHOOK_CODES_PER_DELIVERY} codes needs`);
  if (Number.isFinite(declared) && declared > MAX_DELIVERY_BYTES) throw tooLarge();
  // Listened to rather than iterated: leaving an iteration early would destroy the connection before the answer.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (error: Error | null): void => {
      req.off('data', onData).off('end', onEnd).off('error', stop).off('close', onClose);
      if (error) reject(error);
      else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > MAX_DELIVERY_BYTES) {
        req.pause();
        stop(tooLarge());
      } else chunks.push(chunk);
    };
    const onEnd = (): void => stop(null);
    const onClose = (): void => stop(new Error('the sender closed the connection'));
    req.on('data', onData).on('end', onEnd).on('error', stop).on('close', onClose);
  });
}

function parseDelivery(body: Buffer): { event: InboxEvent['event']; event_time: string; codes: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Refusal(400, 'shape', 'the body is not JSON');
  }
  const parsed = webhookDeliverySchema.safeParse(json);
  if (!parsed.success) throw new Refusal(400, 'shape', `the body is not a member event: ${describeIssues(parsed.error).slice(0, 3).join('; ')}`);
  const { event, event_time: eventTime, member_data: members } = parsed.data;
  if (!TIMESTAMP_PATTERN.test(eventTime)) throw new Refusal(400, 'shape', 'event_time must be YYYY-MM-DD HH:MM:SS');
  if (members.length > MAX_WEBHOOK_CODES_PER_DELIVERY) throw new Refusal(400, 'shape', `member_data holds ${members.length} codes; a delivery holds at most ${MAX_WEBHOOK_CODES_PER_DELIVERY}`);
  return { event, event_time: eventTime, codes: members.map((member) => member.code) };
}
