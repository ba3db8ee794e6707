/**
 * Throttling (DESIGN.md sections 8 and 13): an S3 server that answers 503 SlowDown to a share of
 * the uploads, as AWS does under load. `archive copy` into it through a proxy that throttles every
 * third PUT still copies every snapshot whole (the requests are tried again, with backoff), and
 * `archive check --read-data 100` finds nothing wrong.
 */
import { request, createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../../helpers/emulator.js';
import { useClient } from '../../helpers/client.js';
import { runCli } from '../../helpers/cli-process.js';
import { tempDir } from '../../helpers/export.js';
import { archiveRun } from '../helpers.js';
import { newBucket, s3Server, type S3Server } from '../../helpers/s3-server.js';

const emu = useEmulator({ generate: { members: 20, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [3000, 8000] } });
const api = useClient(emu);
const server = await s3Server();

/** A proxy to `target` that answers every `nth` PUT with 503 SlowDown, unsent. */
function throttling(target: string, nth: number): Promise<{ url: string; throttled: () => number; server: Server }> {
  const to = new URL(target);
  let puts = 0;
  let throttled = 0;
  const proxy = createServer((req, res) => {
    if (req.method === 'PUT' && (puts += 1) % nth === 0) {
      throttled += 1;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
      return;
    }
    const upstream = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => {
    const { port } = proxy.address() as { port: number };
    resolve({ url: `http://127.0.0.1:${port}`, throttled: () => throttled, server: proxy });
  }));
}

describe.skipIf(server === null)('a bucket that answers 503 SlowDown', { timeout: 180_000 }, () => {
  const s3 = server as S3Server;
  const proxies: Server[] = [];
  afterAll(() => {
    for (const p of proxies) p.close();
  });

  it('archive copy retries the throttled uploads and copies every snapshot whole', async () => {
    const folder = join(tempDir('wds-bucket-slow-'), 'archive');
    const id = (await archiveRun(api(), folder)).snapshot!.id;
    const proxy = await throttling(s3.endpoint, 3);
    proxies.push(proxy.server);
    const address = `s3://${await newBucket(s3)}/slow`;
    const env = { ...s3.env, AWS_ENDPOINT_URL_S3: proxy.url };
    const copy = await runCli(['archive', 'copy', folder, address, '--s3-path-style', '--json'], env);
    expect(copy.code, copy.stderr).toBe(0);
    expect(JSON.parse(copy.stdout).copied).toEqual([id]);
    expect(proxy.throttled()).toBeGreaterThan(3);
    const check = await runCli(['archive', 'check', address, '--read-data', '100'], s3.env);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain('1 snapshots');
  });
});
