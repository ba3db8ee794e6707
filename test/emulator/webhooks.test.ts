import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { companyOf } from '../helpers/fixtures.js';
import { webhookDeliverySchema } from '../../src/spec/schemas.js';
import { MAX_WEBHOOK_SETTINGS } from '../../src/spec/limits.js';
import { TIMESTAMP_PATTERN } from '../../src/spec/time.js';

const emu = useEmulator({ allowHttpWebhooks: true });

const company = () => companyOf(emu());
const data = () => company().data;

/** A webhook receiver on 127.0.0.1 that records every delivery and answers as `mode` says. */
interface Delivery {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}
const receiver = {
  server: null as Server | null,
  url: '',
  mode: 'ok' as 'ok' | 'fail' | 'hang',
  deliveries: [] as Delivery[],
  hanging: [] as ServerResponse[],
};

beforeAll(async () => {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      receiver.deliveries.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      if (receiver.mode === 'hang') return void receiver.hanging.push(res);
      res.writeHead(receiver.mode === 'fail' ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.server = server;
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  const server = receiver.server;
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const register = (body: unknown, headers?: Record<string, string>) => emu().api('POST', '/webhook', body, headers);

describe('webhook settings (api-v2.md 2 Webhook setting, 4.4 Webhook settings)', () => {
  beforeEach(() => {
    data().webhooks = [];
  });

  it('lists webhook_data, empty at first', async () => {
    const res = await emu().api('GET', '/webhook');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ webhook_data: [] });
  });

  it('registers a setting and answers it with id, url, events, secret_token, created_at and updated_at', async () => {
    const res = await register({ url: 'https://hooks.example.test/wds', events: ['member_created', 'member_deleted'], secret_token: 'tok' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['created_at', 'events', 'id', 'secret_token', 'updated_at', 'url']);
    expect(res.body).toMatchObject({ url: 'https://hooks.example.test/wds', events: ['member_created', 'member_deleted'], secret_token: 'tok' });
    expect(res.body.created_at).toMatch(TIMESTAMP_PATTERN);
    expect(res.body.updated_at).toBe(res.body.created_at);
    const list = await emu().api('GET', '/webhook');
    expect(list.body.webhook_data).toEqual([res.body]);
  });

  it('answers secret_token null when none is given', async () => {
    const res = await register({ url: 'https://hooks.example.test/', events: ['member_updated'] });
    expect(res.status).toBe(200);
    expect(res.body.secret_token).toBeNull();
  });

  it('requires url and events, naming each', async () => {
    const res = await register({});
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(['url is required', 'events is required']);
    expect((await register(undefined)).status).toBe(400);
  });

  it('refuses a url that does not start with https://', async () => {
    for (const url of ['http://hooks.example.test/', 'ftp://hooks.example.test/', 'hooks.example.test', 'https://', 'HTTPS://hooks.example.test/', 42]) {
      const res = await register({ url, events: ['member_created'] });
      expect(res.status, String(url)).toBe(400);
      expect(res.body.errors[0]).toMatch(/^url must/);
    }
  });

  it('allows http only to 127.0.0.1 and localhost, and only when the company allows http webhooks', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost:9/x']) {
      expect((await register({ url, events: ['member_created'] })).status, url).toBe(200);
    }
    for (const url of ['http://127.0.0.1.example.test/', 'http://localhost@example.test/', 'http://10.0.0.1/']) {
      expect((await register({ url, events: ['member_created'] })).status, url).toBe(400);
    }
    company().settings.allowHttpWebhooks = false;
    try {
      const res = await register({ url: 'http://127.0.0.1:9/x', events: ['member_created'] });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual(['url must be a valid address starting with https://, got "http://127.0.0.1:9/x"']);
    } finally {
      company().settings.allowHttpWebhooks = true;
    }
  });

  it('refuses events that are empty, not an array, unknown or repeated', async () => {
    const url = 'https://hooks.example.test/';
    const empty = await register({ url, events: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.errors[0]).toMatch(/at least one event name/);
    expect((await register({ url, events: 'member_created' })).status).toBe(400);
    const unknown = await register({ url, events: ['member_created', 'member_moved'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual(['events: "member_moved" is not an event name; use member_created, member_updated, member_deleted']);
    const twice = await register({ url, events: ['member_updated', 'member_updated'] });
    expect(twice.status).toBe(400);
    expect(twice.body.errors).toEqual(['events: "member_updated" appears more than once']);
  });

  it('refuses a secret_token that is not a string', async () => {
    const res = await register({ url: 'https://hooks.example.test/', events: ['member_created'], secret_token: 123 });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(['secret_token must be a string']);
  });

  it('holds at most 10 settings', async () => {
    const body = { url: 'https://hooks.example.test/', events: ['member_created'] };
    for (let i = 0; i < MAX_WEBHOOK_SETTINGS; i += 1) expect((await register(body)).status).toBe(200);
    const over = await register(body);
    expect(over.status).toBe(400);
    expect(over.body.errors[0]).toMatch(/at most 10 webhook settings/);
    expect((await register(body, { 'Dry-Run': '1' })).status).toBe(400);
    expect(data().webhooks).toHaveLength(MAX_WEBHOOK_SETTINGS);
    const first = data().webhooks[0]!.id;
    expect((await emu().api('DELETE', `/webhook/${first}`)).status).toBe(204);
    expect((await register(body)).status).toBe(200);
  });

  it('with Dry-Run: 1 answers the would-be setting with the next id and stores nothing', async () => {
    const nextId = data().next_ids.webhook;
    const dry = await register({ url: 'https://hooks.example.test/', events: ['member_created'] }, { 'Dry-Run': '1' });
    expect(dry.status).toBe(200);
    expect(dry.body.id).toBe(nextId);
    expect(data().webhooks).toEqual([]);
    expect(data().next_ids.webhook).toBe(nextId);
    expect((await register({ url: 'http://example.test/', events: [] }, { 'Dry-Run': '1' })).status).toBe(400);
  });

  it('updates a setting: url and events required, secret_token kept when left out and removed by null', async () => {
    const created = (await register({ url: 'https://a.example.test/', events: ['member_created'], secret_token: 'old' })).body;
    const missing = await emu().api('PATCH', `/webhook/${created.id}`, { secret_token: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual(['url is required', 'events is required']);
    await emu().control('POST', '/clock', { advance_seconds: 60 });
    const res = await emu().api('PATCH', `/webhook/${created.id}`, { url: 'https://b.example.test/', events: ['member_deleted', 'member_updated'] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.id, url: 'https://b.example.test/', events: ['member_deleted', 'member_updated'], secret_token: 'old', created_at: created.created_at });
    expect(res.body.updated_at > created.updated_at).toBe(true);
    const cleared = await emu().api('PATCH', `/webhook/${created.id}`, { url: 'https://b.example.test/', events: ['member_deleted'], secret_token: null });
    expect(cleared.body.secret_token).toBeNull();
    const bad = await emu().api('PATCH', `/webhook/${created.id}`, { url: 'http://b.example.test/', events: ['member_moved'] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toHaveLength(2);
    expect(data().webhooks[0]).toMatchObject({ url: 'https://b.example.test/', events: ['member_deleted'] });
  });

  it('with Dry-Run: 1 answers the updated setting and keeps the stored one', async () => {
    const created = (await register({ url: 'https://a.example.test/', events: ['member_created'] })).body;
    const dry = await emu().api('PATCH', `/webhook/${created.id}`, { url: 'https://c.example.test/', events: ['member_created'] }, { 'Dry-Run': '1' });
    expect(dry.status).toBe(200);
    expect(dry.body.url).toBe('https://c.example.test/');
    expect(data().webhooks[0]!.url).toBe('https://a.example.test/');
  });

  it('deletes a setting with 204 and no body; Dry-Run: 1 keeps it; unknown ids are 404', async () => {
    const created = (await register({ url: 'https://a.example.test/', events: ['member_created'] })).body;
    expect((await emu().api('DELETE', `/webhook/${created.id}`, undefined, { 'Dry-Run': '1' })).status).toBe(204);
    expect(data().webhooks).toHaveLength(1);
    const res = await emu().api('DELETE', `/webhook/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(data().webhooks).toEqual([]);
    expect((await emu().api('DELETE', `/webhook/${created.id}`)).status).toBe(404);
    expect((await emu().api('PATCH', `/webhook/${created.id}`, { url: 'https://a.example.test/', events: ['member_created'] })).status).toBe(404);
  });
});

describe('webhook deliveries (api-v2.md 6)', () => {
  const settle = () => emu().emulator.webhooks.settle();
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  beforeEach(() => {
    data().webhooks = [];
    receiver.deliveries = [];
    receiver.mode = 'ok';
  });

  async function subscribe(events: string[], secret_token?: string, path = '/hook'): Promise<number> {
    const res = await register({ url: `${receiver.url}${path}`, events, ...(secret_token ? { secret_token } : {}) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.id;
  }

  it('POSTs the event with Service-Token, Content-Type, User-Agent and {event, event_time, member_data}', async () => {
    await subscribe(['member_created', 'member_updated'], 'tok-1');
    company().emitMemberEvent('member_created', ['A1', 'A2']);
    await settle();
    expect(receiver.deliveries).toHaveLength(1);
    const [delivery] = receiver.deliveries;
    expect(delivery!.method).toBe('POST');
    expect(delivery!.path).toBe('/hook');
    expect(delivery!.headers['service-token']).toBe('tok-1');
    expect(delivery!.headers['content-type']).toBe('application/json');
    expect(delivery!.headers['user-agent']).toBe('Service-Webhook');
    expect(webhookDeliverySchema.safeParse(delivery!.body).success).toBe(true);
    expect(delivery!.body).toEqual({ event: 'member_created', event_time: expect.stringMatching(TIMESTAMP_PATTERN), member_data: [{ code: 'A1' }, { code: 'A2' }] });
    expect(Object.keys(delivery!.body).sort()).toEqual(['event', 'event_time', 'member_data']);
  });

  it('sends only the events a setting subscribes to, to every setting that does', async () => {
    await subscribe(['member_deleted'], 'one', '/one');
    await subscribe(['member_deleted', 'member_updated'], 'two', '/two');
    company().emitMemberEvent('member_updated', ['B1']);
    await settle();
    expect(receiver.deliveries.map((d) => d.path)).toEqual(['/two']);
    company().emitMemberEvent('member_deleted', ['B2']);
    await settle();
    expect(receiver.deliveries.map((d) => d.path).sort()).toEqual(['/one', '/two', '/two']);
  });

  it('leaves the Service-Token header out when the setting has no secret_token', async () => {
    await subscribe(['member_created']);
    company().emitMemberEvent('member_created', ['C1']);
    await settle();
    expect(receiver.deliveries).toHaveLength(1);
    expect(receiver.deliveries[0]!.headers).not.toHaveProperty('service-token');
  });

  it('splits 25,000 codes into deliveries of 10,000, 10,000 and 5,000', async () => {
    await subscribe(['member_updated'], 'tok');
    const codes = Array.from({ length: 25_000 }, (_, i) => `E${String(i).padStart(5, '0')}`);
    company().emitMemberEvent('member_updated', codes);
    await settle();
    expect(receiver.deliveries).toHaveLength(3);
    const parts = receiver.deliveries.map((d) => d.body.member_data.map((m: { code: string }) => m.code) as string[]);
    parts.sort((a, b) => a[0]!.localeCompare(b[0]!));
    expect(parts.map((p) => p.length)).toEqual([10_000, 10_000, 5_000]);
    expect(parts.flat()).toEqual(codes);
    expect(new Set(receiver.deliveries.map((d) => d.body.event_time)).size).toBe(1);
  });

  it('does not resend a delivery that the receiver answered with 500', async () => {
    await subscribe(['member_created'], 'tok');
    receiver.mode = 'fail';
    const failuresBefore = company().stats.webhook_failures;
    company().emitMemberEvent('member_created', ['F1']);
    await settle();
    await pause(300);
    await settle();
    expect(receiver.deliveries).toHaveLength(1);
    expect(company().stats.webhook_failures).toBe(failuresBefore + 1);
    expect(emu().emulator.webhooks.log.at(-1)).toMatchObject({ ok: false, status: 500, codes: 1 });
  });

  it('gives up on a receiver that does not answer in time, and does not resend', async () => {
    const dispatcher = emu().emulator.webhooks;
    const timeout = dispatcher.timeoutMs;
    dispatcher.timeoutMs = 200;
    try {
      await subscribe(['member_created'], 'tok');
      receiver.mode = 'hang';
      const started = Date.now();
      company().emitMemberEvent('member_created', ['H1']);
      await settle();
      expect(Date.now() - started).toBeLessThan(5_000);
      await pause(300);
      await settle();
      expect(receiver.deliveries).toHaveLength(1);
      expect(dispatcher.log.at(-1)).toMatchObject({ ok: false, status: null, error: expect.stringMatching(/no answer within/) });
    } finally {
      dispatcher.timeoutMs = timeout;
    }
  });

  it('stops sending to a deleted setting and sends to the new url of an updated one', async () => {
    const id = await subscribe(['member_created'], 'tok', '/old');
    const updated = await emu().api('PATCH', `/webhook/${id}`, { url: `${receiver.url}/new`, events: ['member_created'] });
    expect(updated.status).toBe(200);
    company().emitMemberEvent('member_created', ['G1']);
    await settle();
    expect(receiver.deliveries.map((d) => d.path)).toEqual(['/new']);
    expect(receiver.deliveries[0]!.headers['service-token']).toBe('tok');
    expect((await emu().api('DELETE', `/webhook/${id}`)).status).toBe(204);
    company().emitMemberEvent('member_created', ['G2']);
    await settle();
    expect(receiver.deliveries).toHaveLength(1);
  });
});
