/**
 * The HTTP or HTTPS server of `webhook serve` around the receiver's handler. Its close stops
 * accepting connections, lets the requests under way be stored and answered, and only then ends
 * the connections, so that a stop by SIGTERM never drops a delivery it had started to store.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { WEBHOOK_TIMEOUT_MS } from '../spec/limits.js';
import { listenOn } from '../util/listen.js';

export interface WebhookServer {
  /** `http(s)://host:port`, the port chosen when 0 was asked. */
  url: string;
  /** Stops accepting, waits for the requests under way to be answered, then closes every connection. */
  close: () => Promise<void>;
}

export interface WebhookServerOptions {
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  port: number;
  host: string;
  /** HTTPS with this certificate and key; plain HTTP when null. */
  tls: { cert: Buffer; key: Buffer } | null;
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  // The service gives up after 10 s (api-v2.md 6 rule 1): a request slower than that is not worth the wait.
  const timeouts = { requestTimeout: WEBHOOK_TIMEOUT_MS, headersTimeout: WEBHOOK_TIMEOUT_MS };
  const server: Server = options.tls ? createHttpsServer({ ...options.tls, ...timeouts }) : createHttpServer(timeouts);
  const inFlight = new Set<ServerResponse>();
  let drained: (() => void) | null = null;
  let closing = false;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    inFlight.add(res);
    // Once closing, a sender that keeps its connection busy is told to go, or the stop would wait for it forever.
    if (closing) res.setHeader('Connection', 'close');
    res.once('close', () => {
      inFlight.delete(res);
      if (inFlight.size === 0) drained?.();
    });
    options.handler(req, res);
  });
  const authority = await listenOn(server, options.port, options.host);
  return {
    url: `${options.tls ? 'https' : 'http'}://${authority}`,
    close: async () => {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      if (inFlight.size > 0) await new Promise<void>((resolve) => (drained = resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}
