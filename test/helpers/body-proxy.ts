/**
 * A proxy in front of the emulator that reads each request's body whole before forwarding it, so
 * that a test can look at what was sent, or answer in the service's place.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BodyProxy {
  url: string;
  close: () => Promise<void>;
}

/**
 * `onRequest` sees each request with its body; when it returns true it has answered `res` itself
 * and the request goes no further.
 */
export async function startBodyProxy(target: string, onRequest: (req: IncomingMessage, body: Buffer, res: ServerResponse) => boolean | void): Promise<BodyProxy> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (onRequest(req, body, res)) return;
      const headers = { ...req.headers, 'content-length': String(body.length) };
      delete headers['transfer-encoding'];
      const forward = request({ hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
