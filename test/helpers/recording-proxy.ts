/**
 * A forwarding proxy in front of the emulator that records every request's method, path, headers
 * and answer status. The Host header is forwarded as sent, so the emulator builds its download
 * URLs on the proxy's address and storage requests pass through it too.
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { clientFor } from './client.js';
import type { TestEmulator } from './emulator.js';
import type { WdsClient } from '../../src/index.js';

export interface RecordedRequest {
  method: string;
  /** Path and query as requested. */
  url: string;
  headers: IncomingHttpHeaders;
  status?: number;
  /** Whether the answer body reached the client whole. */
  complete?: boolean;
  /** When the request came in, and when its answer was done with (performance.now()). */
  startedAt: number;
  endedAt?: number;
  /** Which client connection it came on (numbered as they were accepted). */
  connection: number;
}

export interface RecordingProxy {
  url: string;
  requests: RecordedRequest[];
  close: () => Promise<void>;
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const requests: RecordedRequest[] = [];
  const connections = new WeakMap<object, number>();
  let accepted = 0;
  const server: Server = createServer((req, res) => {
    const record: RecordedRequest = {
      method: req.method ?? 'GET', url: req.url ?? '/', headers: { ...req.headers }, startedAt: performance.now(), connection: connections.get(req.socket) ?? -1,
    };
    requests.push(record);
    res.on('close', () => (record.endedAt = performance.now()));
    const forward = request(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        record.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => (record.complete = true));
        // A cut upstream body is cut for the client too.
        answer.on('aborted', () => res.destroy());
        answer.on('error', () => res.destroy());
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  server.on('connection', (socket) => connections.set(socket, accepted++));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * A recording proxy in front of the test file's emulator and a client that goes through it, both
 * started before the file's tests and closed after them.
 */
export function useProxiedClient(emu: () => TestEmulator): () => { proxy: RecordingProxy; client: WdsClient } {
  let proxy: RecordingProxy | undefined;
  let client: WdsClient | undefined;
  beforeAll(async () => {
    proxy = await startRecordingProxy(emu().url);
    client = clientFor({ ...emu(), url: proxy.url });
  });
  afterAll(async () => {
    await client?.close();
    await proxy?.close();
  });
  return () => {
    if (!proxy || !client) throw new Error('the proxy has not started');
    return { proxy, client };
  };
}
