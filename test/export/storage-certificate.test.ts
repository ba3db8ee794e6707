/**
 * Storage whose TLS certificate Node refuses (self-signed here): every file of the run would meet
 * the same certificate, so the export stops at once with the reason instead of trying each file
 * eight times. The listing's download URLs are rewritten to an https server on the way (a CDN
 * with a certificate from a private CA, as behind a company's TLS inspection).
 */
import { existsSync } from 'node:fs';
import { createServer as createHttpServer, request, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { runCli } from '../helpers/cli-process.js';
import { selfSignedTls } from '../helpers/tls.js';

const emu = useEmulator({ generate: { members: 40, photo_ratio: 1, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] } });
const servers: Server[] = [];
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
});

const listen = async <S extends Server>(server: S): Promise<number> => {
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as AddressInfo).port;
};

it('an export whose storage certificate is refused stops at once, naming the host and the reason, never the signed URL', async () => {
  let handshakes = 0;
  const storage = createHttpsServer(selfSignedTls(), (_req, res) => res.end());
  storage.on('connection', () => (handshakes += 1));
  const storagePort = await listen(storage);
  const upstream = new URL(emu().url);
  // Forwards to the emulator; a listing's download URLs are moved to the https server.
  const front = createHttpServer((req, res) => {
    const forward = request({ hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        let body = Buffer.concat(chunks).toString('utf8');
        body = body.replaceAll(`http://${req.headers.host}/storage/`, `https://127.0.0.1:${storagePort}/storage/`);
        const headers = { ...answer.headers, 'content-length': String(Buffer.byteLength(body)) };
        res.writeHead(answer.statusCode ?? 502, headers);
        res.end(body);
      });
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  const frontPort = await listen(front);

  const out = join(tempDir(), 'photos');
  const run = await runCli(['photos', 'export', '--out', out, '--concurrency', '4', '--base-url', `http://127.0.0.1:${frontPort}`, '--consumer-key', KEY, '--consumer-secret', SECRET]);
  expect(run.code, run.stdout + run.stderr).toBe(1);
  expect(run.stderr).toContain(`the TLS certificate of 127.0.0.1:${storagePort} was refused: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)`);
  expect(run.stderr).toContain('NODE_EXTRA_CA_CERTS');
  expect(run.stdout + run.stderr).not.toMatch(/Signature=|Expires=/);
  // At most the downloads under way met the certificate: 40 photos tried 8 times each would be 320.
  expect(handshakes).toBeGreaterThan(0);
  expect(handshakes).toBeLessThanOrEqual(8);
  // The run that made the folder takes it away again, its lock and temporary folder with it.
  expect(existsSync(out)).toBe(false);
});
