/**
 * `wds-files webhook serve` as a child process, with the emulator delivering to it over HTTP and
 * the test sending what the service never would (DESIGN.md section 15).
 */
import { request as httpRequest } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { runCli } from '../helpers/cli-process.js';
import { selfSignedTls } from '../helpers/tls.js';
import { TOKEN, deliveryBody, inboxEvents, inboxFilesText, inboxFolder, startServe } from '../helpers/webhook-serve.js';
import { MAX_DELIVERY_BYTES } from '../../src/webhooks/receiver.js';

const emu = useEmulator({ allowHttpWebhooks: true });

async function post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<number> {
  const res = await request(url, { method: 'POST', body, headers });
  await res.body.text();
  return res.statusCode;
}

const jsonHeaders = { 'Content-Type': 'application/json', 'Service-Token': TOKEN, 'User-Agent': 'Service-Webhook' };

describe('webhook serve with the emulator delivering', () => {
  it('stores each member creation, update and deletion made through the API once, as the delivery log lists them, and prints no token', async () => {
    const dir = inboxFolder();
    const serve = await startServe(dir, ['--path', '/hooks/wds']);
    const e = emu();
    // Two settings naming the receiver: every event comes twice, and is stored once.
    for (const events of [['member_created', 'member_updated', 'member_deleted'], ['member_created', 'member_deleted']]) {
      const setting = await e.api('POST', '/webhook', { url: `${serve.url}/hooks/wds`, events, secret_token: TOKEN });
      expect(setting.status, JSON.stringify(setting.body)).toBe(200);
    }
    const logBefore = ((await e.control('GET', '/webhooks')) as { deliveries: unknown[] }).deliveries.length;

    const registered = await e.api('POST', '/members', { member_data: [{ code: 'WH-1', name: 'Hook One' }, { code: 'WH-2', name: 'Hook Two' }] });
    expect((await e.waitTask(registered.body.task_id)).status).toBe('OK');
    const updated = await e.api('PATCH', '/members', { member_data: [{ code: 'WH-1', name: 'Hook One Renamed' }] });
    expect((await e.waitTask(updated.body.task_id)).status).toBe('OK');
    const deleted = await e.api('POST', '/members/delete', { codes: ['WH-2'] });
    expect((await e.waitTask(deleted.body.task_id)).status).toBe('OK');
    await e.emulator.webhooks.settle();

    const log = ((await e.control('GET', '/webhooks')) as { deliveries: { event: string; event_time: string; codes: number; ok: boolean; status: number }[] }).deliveries.slice(logBefore);
    expect(log.map((d) => d.event).sort()).toEqual(['member_created', 'member_created', 'member_deleted', 'member_deleted', 'member_updated']);
    expect(log.every((d) => d.ok && d.status === 200)).toBe(true);

    const events = await inboxEvents(dir);
    expect(events.map((event) => ({ event: event.event, codes: event.codes, source: event.source }))).toEqual([
      { event: 'member_created', codes: ['WH-1', 'WH-2'], source: 'delivery' },
      { event: 'member_updated', codes: ['WH-1'], source: 'delivery' },
      { event: 'member_deleted', codes: ['WH-2'], source: 'delivery' },
    ]);
    const distinct = new Set(log.map((d) => `${d.event} ${d.event_time} ${d.codes}`));
    expect(new Set(events.map((event) => `${event.event} ${event.event_time} ${event.codes.length}`))).toEqual(distinct);

    const listed = await runCli(['webhook', 'events', '--inbox', dir, '--json']);
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual(events);

    serve.child.kill('SIGTERM');
    expect((await serve.ended).code).toBe(0);
    expect(serve.stderr()).toMatch(/3 stored, 2 duplicates, 0 refused/);
    for (const text of [serve.stdout(), serve.stderr(), listed.stdout, listed.stderr, inboxFilesText(dir)]) expect(text).not.toContain(TOKEN);
  });
});

describe('webhook serve refuses', () => {
  it('a wrong or missing token, another content type, a body not of the delivery shape and an oversized body, storing none, and counts each refusal', async () => {
    const dir = inboxFolder();
    const serve = await startServe(dir, ['--status-port', '0']);
    const good = deliveryBody('member_created', '2026-12-02 10:00:00', ['R1']);
    expect(await post(serve.url, good, { ...jsonHeaders, 'Service-Token': `${TOKEN}x` })).toBe(401);
    expect(await post(serve.url, good, { 'Content-Type': 'application/json' })).toBe(401);
    expect(await post(serve.url, good, { ...jsonHeaders, 'Content-Type': 'text/plain' })).toBe(400);
    expect(await post(serve.url, '{"event": "member_created"', jsonHeaders)).toBe(400);
    expect(await post(serve.url, JSON.stringify({ event: 'member_moved', event_time: '2026-12-02 10:00:00', member_data: [{ code: 'R1' }] }), jsonHeaders)).toBe(400);
    expect(await post(serve.url, JSON.stringify({ event: 'member_created', event_time: '2026-12-02T10:00:00Z', member_data: [{ code: 'R1' }] }), jsonHeaders)).toBe(400);
    expect(await post(serve.url, deliveryBody('member_created', '2026-12-02 10:00:00', Array.from({ length: 10_001 }, (_, i) => `C${i}`)), jsonHeaders)).toBe(400);
    expect(await post(serve.url, Buffer.alloc(MAX_DELIVERY_BYTES + 1, 0x20), jsonHeaders)).toBe(413);
    expect(await post(`${serve.url}/elsewhere`, good, jsonHeaders)).toBe(404);
    expect(await inboxEvents(dir)).toEqual([]);

    // Accepted after all that: the refusals broke nothing.
    expect(await post(serve.url, good, jsonHeaders)).toBe(200);
    expect((await inboxEvents(dir)).map((event) => event.codes)).toEqual([['R1']]);

    const metrics = await (await fetch(`${serve.statusUrl}/metrics`)).text();
    expect(metrics).toMatch(/wds_webhook_refused_total\{reason="token"\} 2/);
    expect(metrics).toMatch(/wds_webhook_refused_total\{reason="content_type"\} 1/);
    expect(metrics).toMatch(/wds_webhook_refused_total\{reason="shape"\} 4/);
    expect(metrics).toMatch(/wds_webhook_refused_total\{reason="too_large"\} 1/);
    expect(metrics).toMatch(/wds_webhook_deliveries_total\{outcome="stored"\} 1/);
    expect(metrics).toMatch(/wds_webhook_inbox_events 1/);
    expect((await fetch(`${serve.statusUrl}/healthz`)).status).toBe(200);
    for (const text of [serve.stdout(), serve.stderr(), inboxFilesText(dir)]) expect(text).not.toContain(TOKEN);
  });

  it('an oversized body as soon as it is known, before it has been sent whole', async () => {
    const dir = inboxFolder();
    const serve = await startServe(dir);
    const { port } = new URL(serve.url);
    // Declared: answered from the Content-Length alone, with 64 KiB of 50 MB sent.
    // Not declared (chunked): answered once the count passes the limit, long before 50 MB.
    for (const declared of [true, false]) {
      const sent = await new Promise<{ status: number; bytes: number }>((resolve, reject) => {
        let bytes = 0;
        const req = httpRequest({
          host: '127.0.0.1', port, method: 'POST', path: '/',
          headers: { ...jsonHeaders, ...(declared ? { 'Content-Length': String(50_000_000) } : {}) },
        }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, bytes });
          req.destroy();
        });
        req.on('error', reject);
        const chunk = Buffer.alloc(65_536, 0x20);
        const more = (): void => {
          if (req.destroyed || bytes >= 50_000_000) return;
          bytes += chunk.length;
          if (req.write(chunk)) setImmediate(more);
          else req.once('drain', more);
        };
        more();
      });
      expect(sent.status).toBe(413);
      expect(sent.bytes).toBeLessThan(10 * MAX_DELIVERY_BYTES);
    }
    expect(await inboxEvents(dir)).toEqual([]);
  });

  it('to start without a token, and never takes one from a flag', async () => {
    const run = await runCli(['webhook', 'serve', '--port', '0', '--inbox', inboxFolder()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/WDS_WEBHOOK_TOKEN or give --token-file/);
    const flag = await runCli(['webhook', 'serve', '--port', '0', '--inbox', inboxFolder(), '--token', TOKEN], { WDS_WEBHOOK_TOKEN: TOKEN });
    expect(flag.code).toBe(2);
    expect(flag.stdout + flag.stderr).not.toContain(TOKEN);
  });
});

describe('webhook serve over HTTPS', () => {
  it('takes the token from --token-file and stores a delivery sent over TLS', async () => {
    const dir = inboxFolder();
    const files = inboxFolder();
    const { cert, key } = selfSignedTls();
    writeFileSync(join(files, 'cert.pem'), cert);
    writeFileSync(join(files, 'key.pem'), key);
    writeFileSync(join(files, 'token'), `${TOKEN}\n`, { mode: 0o600 });
    const serve = await startServe(dir, ['--tls-cert', join(files, 'cert.pem'), '--tls-key', join(files, 'key.pem'), '--token-file', join(files, 'token')], {});
    expect(serve.url).toMatch(/^https:/);
    const dispatcher = new Agent({ connect: { ca: cert } });
    try {
      const res = await request(serve.url, { method: 'POST', dispatcher, headers: jsonHeaders, body: deliveryBody('member_deleted', '2026-12-02 10:00:00', ['T1']) });
      await res.body.text();
      expect(res.statusCode).toBe(200);
    } finally {
      await dispatcher.close();
    }
    expect((await inboxEvents(dir)).map((event) => [event.event, event.codes])).toEqual([['member_deleted', ['T1']]]);
  });
});
