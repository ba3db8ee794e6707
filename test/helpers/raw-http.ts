/**
 * Requests through node:http, for tests that must see what fetch hides: a body cut short of its
 * Content-Length, a connection reset mid-body, the exact bytes of a Range answer.
 */
import { request } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body bytes received before the answer ended or failed. */
  body: Buffer;
  /** Set when the connection failed before the answer was complete. */
  error?: string;
  /** Whether the body arrived whole (the `end` event). */
  complete: boolean;
  /** Real milliseconds from sending to the end (or the failure). */
  ms: number;
}

export function rawRequest(url: string, options: { method?: string; headers?: Record<string, string | number>; body?: Buffer } = {}): Promise<RawAnswer> {
  const u = new URL(url);
  const started = Date.now();
  return new Promise((resolve) => {
    const req = request(
      { hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: options.method ?? 'GET', headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        const finish = (error?: string): void => {
          resolve({
            status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks),
            complete: error === undefined, ms: Date.now() - started, ...(error !== undefined ? { error } : {}),
          });
        };
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => finish());
        res.on('error', (error) => finish(error.message));
        res.on('aborted', () => finish('aborted'));
      },
    );
    req.on('error', (error) => resolve({ status: 0, headers: {}, body: Buffer.alloc(0), error: error.message, complete: false, ms: Date.now() - started }));
    req.end(options.body);
  });
}
