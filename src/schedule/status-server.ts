/**
 * `--status-port` of `schedule` and `webhook serve`: `/healthz` (200, or 503 naming the pipelines
 * whose last completed run failed, or what fails in the receiver) and `/metrics` (Prometheus text).
 * Bound to 127.0.0.1 unless told otherwise: the health of a backup job is nobody else's business,
 * and a container maps the port when it wants it seen.
 */
import { createServer, type Server } from 'node:http';
import { listenOn } from '../util/listen.js';

/** What `/healthz` reports: 200 when ok, else 503 with what fails (the scheduler's pipelines, the receiver's inbox). */
export interface StatusHealth {
  ok: boolean;
  failing: unknown[];
}

/** What `/metrics` serves: the scheduler's or the webhook receiver's registry. */
export interface StatusMetrics {
  text: () => Promise<string>;
  contentType: string;
}

export interface StatusServer {
  /** `http://host:port`, the port chosen when 0 was asked. */
  url: string;
  close: () => Promise<void>;
}

export async function startStatusServer(options: { port: number; host: string; health: () => StatusHealth; metrics: StatusMetrics }): Promise<StatusServer> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://status').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end('only GET\n');
      return;
    }
    if (path === '/healthz') {
      const health = options.health();
      res.writeHead(health.ok ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      res.end(`${JSON.stringify({ status: health.ok ? 'ok' : 'failing', failing: health.failing })}\n`);
      return;
    }
    if (path === '/metrics') {
      options.metrics.text().then(
        (text) => res.writeHead(200, { 'Content-Type': options.metrics.contentType }).end(text),
        (error: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${error.message}\n`),
      );
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('this server answers /healthz and /metrics\n');
  });
  const authority = await listenOn(server, options.port, options.host);
  return {
    url: `http://${authority}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
