/**
 * The token budget is charged only for attempts that reached the service: a refused connection,
 * or https:// to a server that speaks http, takes no slot of any window (the legacy interface has
 * 5 tokens an hour), while an attempt that was answered, or sent and its answer lost, keeps its
 * slot. And a token kept between runs (`tokenCache`): a second client uses the first one's token,
 * the file is mode 0600, a token issued for another secret is not used, and a token the service
 * refuses is replaced.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { clientFor, tempStateFile } from '../helpers/client.js';
import { useEnv } from '../helpers/env.js';
import { selfSignedTls } from '../helpers/tls.js';
import { AuthenticationError, LegacyClient, NetworkError, WdsClient, type WdsClientOptions } from '../../src/index.js';
import { defaultTokenCacheFile } from '../../src/client/token-cache.js';

const emu = useEmulator();
const state = mkdtempSync(join(tmpdir(), 'wds-token-state-'));
useEnv({ XDG_STATE_HOME: state, XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-token-cache-')) });
const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((done) => s.close(done))));
});
afterEach(async () => {
  await emu().control('POST', '/reset');
});

/** A port nobody listens on: taken, then let go. */
async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** A server that reads each request whole, then cuts the connection without an answer. */
async function answerLost(): Promise<string> {
  const server = createHttpServer((req) => {
    req.resume();
    req.on('end', () => req.socket.destroy());
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const quickRetries = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 10 };

function client(baseUrl: string, extra: Partial<WdsClientOptions> = {}): WdsClient {
  return new WdsClient({ baseUrl, consumerKey: KEY, consumerSecret: SECRET, stateFile: tempStateFile(), retry: quickRetries, ...extra });
}

describe('what a token attempt costs', () => {
  it('a refused connection costs no token and no request; where nothing ever answered, it is not tried again', async () => {
    const c = client(`http://127.0.0.1:${await closedPort()}`);
    const error = await c.faceImages.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as Error).message).toContain('ECONNREFUSED');
    expect((error as Error).message).toContain('check the base URL');
    expect(c.transport.counters.requests).toBe(1);
    expect(await c.limiter!.used('token')).toBe(0);
    expect(await c.limiter!.used('request')).toBe(0);
    await c.close();
  });

  it('the legacy client: refused attempts leave its 5 tokens an hour whole', async () => {
    const legacy = new LegacyClient({ baseUrl: `http://127.0.0.1:${await closedPort()}`, consumerKey: KEY, consumerSecret: SECRET, stateFile: tempStateFile(), retry: { ...quickRetries, maxAttempts: 6 } });
    // Charged, a sixth attempt would wait the hour for a slot of the five (refused at first contact, it is the only one).
    await expect(legacy.departments.list()).rejects.toBeInstanceOf(NetworkError);
    expect(await legacy.transport.limiter!.used('token')).toBe(0);
    expect(await legacy.transport.limiter!.used('request')).toBe(0);
    await legacy.close();
  });

  it('an attempt that was sent keeps its slot: answered (401), or its answer lost', async () => {
    const refused = clientFor(emu(), { consumerSecret: 'not-the-secret-9d2' });
    await expect(refused.faceImages.list()).rejects.toBeInstanceOf(AuthenticationError);
    expect(await refused.limiter!.used('token')).toBe(1);
    await refused.close();

    const lost = client(await answerLost());
    await expect(lost.faceImages.list()).rejects.toBeInstanceOf(NetworkError);
    expect(await lost.limiter!.used('token')).toBe(3);
    await lost.close();
  });

  it('https:// to a server that speaks http: said at once, no retries, nothing charged', async () => {
    const waits: string[] = [];
    const https = emu().url.replace(/^http:/, 'https:');
    const c = client(https, { retry: { maxAttempts: 6, baseDelayMs: 200 }, onWait: (e) => waits.push(e.reason) });
    const error = await c.faceImages.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    const message = (error as Error).message;
    expect(message).toContain('https:// to a server that speaks http?');
    expect(message).toContain(`its base URL is ${emu().url}`);
    expect(message).not.toMatch(/SSL routines|ssl3_get_record/);
    expect(c.transport.counters.requests).toBe(1);
    expect(waits).toEqual([]);
    expect(await c.limiter!.used('token')).toBe(0);
    await c.close();
  });

  it('a certificate Node refuses (self-signed): said at once with its reason, no retries, nothing charged', async () => {
    let answered = 0;
    const server = createHttpsServer(selfSignedTls(), (_req, res) => {
      answered += 1;
      res.end('{}');
    });
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const waits: string[] = [];
    const c = client(url, { retry: { maxAttempts: 6, baseDelayMs: 200 }, onWait: (e) => waits.push(e.reason) });
    const error = await c.faceImages.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    const message = (error as Error).message;
    // Node 24 adds a hint of its own (--use-system-ca) between the reason and its code.
    expect(message).toContain(`the TLS certificate of ${new URL(url).host} was refused: self-signed certificate`);
    expect(message).toContain('(DEPTH_ZERO_SELF_SIGNED_CERT)');
    expect(message).toContain('NODE_EXTRA_CA_CERTS');
    expect(waits).toEqual([]);
    expect(answered).toBe(0);
    expect(await c.limiter!.used('token')).toBe(0);
    await c.close();
  });
});

describe('a token kept between runs', () => {
  it('a second client uses the first one\'s token; the file is 0600 in a 0700 folder', async () => {
    const first = clientFor(emu(), { tokenCache: true });
    await first.faceImages.list();
    await first.close();
    const file = defaultTokenCacheFile('v2', emu().url, KEY);
    expect(file.startsWith(join(state, 'wds-files', 'tokens'))).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(state, 'wds-files', 'tokens')).mode & 0o777).toBe(0o700);
    // The key is hashed out of the name, the secret is not in the file.
    expect(file).not.toContain(KEY);
    expect(readFileSync(file, 'utf8')).not.toContain(SECRET);

    const second = clientFor(emu(), { tokenCache: true });
    await second.faceImages.list();
    await second.close();
    const stats = await emu().control('GET', '/stats');
    expect(stats.tokens_issued).toBe(1);
    expect(stats.requests['GET /members/face_image']).toBe(2);
  });

  it('a token issued for another secret is not used: the wrong secret fails as it should', async () => {
    const right = clientFor(emu(), { tokenCache: true });
    await right.faceImages.list();
    await right.close();
    const wrong = clientFor(emu(), { tokenCache: true, consumerSecret: 'rotated-away-5b1' });
    await expect(wrong.faceImages.list()).rejects.toBeInstanceOf(AuthenticationError);
    await wrong.close();
  });

  it('a cached token the service refuses is replaced once, and the new one is kept', async () => {
    const first = clientFor(emu(), { tokenCache: true });
    await first.faceImages.list();
    await first.close();
    const file = defaultTokenCacheFile('v2', emu().url, KEY);
    const before = JSON.parse(readFileSync(file, 'utf8')) as { access_token: string };
    // The service's clock passes the token's hour; this machine's does not.
    await emu().control('POST', '/clock', { advance_seconds: 3601 });
    const second = clientFor(emu(), { tokenCache: true });
    await second.faceImages.list();
    await second.close();
    expect((await emu().control('GET', '/stats')).tokens_issued).toBe(2);
    const after = JSON.parse(readFileSync(file, 'utf8')) as { access_token: string };
    expect(after.access_token).not.toBe(before.access_token);
  });

  it('off by default in the SDK: nothing is written', async () => {
    const own = mkdtempSync(join(tmpdir(), 'wds-token-off-'));
    const saved = process.env.XDG_STATE_HOME;
    process.env.XDG_STATE_HOME = own;
    try {
      const c = clientFor(emu());
      await c.faceImages.list();
      await c.close();
      expect(existsSync(join(own, 'wds-files'))).toBe(false);
      expect(readdirSync(own)).toEqual([]);
    } finally {
      process.env.XDG_STATE_HOME = saved;
    }
  });
});
