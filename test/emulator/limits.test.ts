import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useEmulator, API, KEY, SECRET, type TestEmulator } from '../helpers/emulator.js';
import { addMember, b64, companyOf, jpeg, setPhoto } from '../helpers/fixtures.js';
import { MAX_REQUEST_BYTES, REQUESTS_PER_HOUR, TOKENS_PER_HOUR, UPDATE_REQUESTS_PER_MINUTE } from '../../src/spec/limits.js';

/** A cheap update request: a dry-run face image register (a task operation). */
async function dryRunUpdate(emu: TestEmulator, code: string): Promise<{ status: number; body: any; headers: Headers }> {
  return emu.api('POST', '/members/face_image', { member_data: [{ code, base64_face_image: b64(await jpeg()) }] }, { 'Dry-Run': '1' });
}

async function issueToken(emu: TestEmulator, key = KEY, secret = SECRET): Promise<Response> {
  return fetch(`${emu.url}${API}/token`, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
      'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8',
    },
    body: 'grant_type=client_credentials',
  });
}

function expectRetryAfter(headers: Headers, max: number): void {
  const value = Number(headers.get('retry-after'));
  expect(Number.isInteger(value)).toBe(true);
  expect(value).toBeGreaterThanOrEqual(1);
  expect(value).toBeLessThanOrEqual(max);
}

describe('update requests: 5 a minute (api-v2.md 8)', () => {
  const emu = useEmulator();

  it('answers the 6th update request of a minute 429 with Retry-After and errors, and counts it', async () => {
    addMember(emu(), 'U001');
    await emu().control('POST', '/stats/reset');
    expect(UPDATE_REQUESTS_PER_MINUTE).toBe(5);
    for (let i = 0; i < 5; i += 1) {
      const ok = await dryRunUpdate(emu(), 'U001');
      expect(ok.status).toBe(200);
      expect(typeof ok.body.task_id).toBe('number');
    }
    const refused = await dryRunUpdate(emu(), 'U001');
    expect(refused.status).toBe(429);
    expect(refused.body.errors).toEqual([expect.stringMatching(/update requests/)]);
    expectRetryAfter(refused.headers, 60);
    const stats = await emu().control('GET', '/stats');
    expect(stats.rate_limited).toBe(1);
    expect(stats.update_requests).toBe(5);
  });

  it('still answers reads while updates are limited', async () => {
    expect((await dryRunUpdate(emu(), 'U001')).status).toBe(429);
    for (let i = 0; i < 10; i += 1) {
      expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
    }
    expect((await emu().api('GET', '/tasks/1')).status).toBe(200);
  });

  it('allows updates again a minute of service time later', async () => {
    expect((await dryRunUpdate(emu(), 'U001')).status).toBe(429);
    await emu().control('POST', '/clock', { advance_seconds: 60 });
    expect((await dryRunUpdate(emu(), 'U001')).status).toBe(200);
  });
});

describe('requests: a configurable number an hour (api-v2.md 8)', () => {
  const emu = useEmulator({ limits: { requestsPerHour: 20 } });

  it('answers the request after the hourly budget 429, not counting storage downloads, until an hour passes', async () => {
    const photo = await jpeg();
    setPhoto(emu(), 'H001', photo);
    addMember(emu(), 'H001');
    await emu().control('POST', '/stats/reset');
    const listing = await emu().api('GET', '/members/face_image');
    expect(listing.status).toBe(200);
    const url: string = listing.body.member_data[0].download_url;
    // Downloads from storage are not API requests: 30 of them leave the budget untouched.
    for (let i = 0; i < 30; i += 1) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    for (let i = 1; i < 20; i += 1) expect((await emu().api('GET', '/tasks/999')).status).toBe(404);
    const refused = await emu().api('GET', '/tasks/999');
    expect(refused.status).toBe(429);
    expect(refused.body.errors).toEqual([expect.stringMatching(/20 requests in an hour/)]);
    expectRetryAfter(refused.headers, 3600);
    const stats = await emu().control('GET', '/stats');
    expect(stats.rate_limited).toBe(1);
    expect(stats.storage_downloads).toBe(30);

    await emu().control('POST', '/clock', { advance_seconds: 1800 });
    expect((await emu().api('GET', '/tasks/999')).status).toBe(429);
    await emu().control('POST', '/clock', { advance_seconds: 1800 });
    // The token expired with the hour; a new one is a token request, not an API request.
    const token = await emu().token();
    const again = await fetch(`${emu().url}${API}/tasks/999`, { headers: { 'Service-Token': token } });
    expect(again.status).toBe(404);
  });
});

describe('tokens: a configurable number an hour (api-v2.md 8)', () => {
  const emu = useEmulator({ limits: { tokensPerHour: 3 } });

  it('answers the token after the hourly budget 429 with Retry-After and errors', async () => {
    for (let i = 0; i < 3; i += 1) expect((await issueToken(emu())).status).toBe(200);
    const refused = await issueToken(emu());
    expect(refused.status).toBe(429);
    expectRetryAfter(refused.headers, 3600);
    expect(((await refused.json()) as { errors: string[] }).errors).toEqual([expect.stringMatching(/3 tokens/)]);
    const stats = await emu().control('GET', '/stats');
    expect(stats.tokens_issued).toBe(3);
    expect(stats.rate_limited).toBe(1);
    await emu().control('POST', '/clock', { advance_seconds: 3600 });
    expect((await issueToken(emu())).status).toBe(200);
  });
});

describe('default limits: 3,000 requests and 1,000 tokens an hour (api-v2.md 8)', () => {
  const emu = useEmulator();

  it('runs with the limits of the specification', () => {
    expect(companyOf(emu()).settings.limits).toEqual({
      requestsPerHour: REQUESTS_PER_HOUR, updatesPerMinute: UPDATE_REQUESTS_PER_MINUTE, tokensPerHour: TOKENS_PER_HOUR,
    });
    expect(REQUESTS_PER_HOUR).toBe(3000);
    expect(TOKENS_PER_HOUR).toBe(1000);
  });

  it('answers 3,000 requests and refuses the 3,001st', async () => {
    const token = await emu().token();
    const one = async (): Promise<number> => {
      const res = await fetch(`${emu().url}${API}/tasks/999`, { headers: { 'Service-Token': token } });
      await res.arrayBuffer();
      return res.status;
    };
    const statuses = new Map<number, number>();
    for (let sent = 0; sent < 3000; sent += 20) {
      for (const status of await Promise.all(Array.from({ length: 20 }, one))) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 404: 3000 });
    expect(await one()).toBe(429);
  });

  it('issues 1,000 tokens and refuses the 1,001st', async () => {
    const before = (await emu().control('GET', '/stats')).tokens_issued as number;
    for (let issued = before; issued < 1000; issued += 25) {
      const batch = Math.min(25, 1000 - issued);
      const statuses = await Promise.all(Array.from({ length: batch }, async () => (await issueToken(emu())).status));
      expect(statuses.every((s) => s === 200)).toBe(true);
    }
    expect((await issueToken(emu())).status).toBe(429);
    expect((await emu().control('GET', '/stats')).tokens_issued).toBe(1000);
  });
});

describe('request size: at most 250 MB (api-v2.md 8)', () => {
  const emu = useEmulator();

  /** Sends a body that never reaches its end unless the server answers first. */
  function oversized(token: string, mode: 'declared' | 'streamed'): Promise<{ status: number; body: string }> {
    const u = new URL(`${emu().url}${API}/members/face_image`);
    const headers: Record<string, string | number> = { 'Service-Token': token, 'Content-Type': 'application/json' };
    if (mode === 'declared') headers['Content-Length'] = MAX_REQUEST_BYTES + 1;
    return new Promise((resolve, reject) => {
      let answered = false;
      const req = request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers, agent: false }, (res) => {
        answered = true;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', (error) => {
        if (!answered) reject(error);
      });
      // One buffer of 1 MB, written again and again: the test allocates it once.
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const pump = (): void => {
        while (!answered && !req.destroyed) {
          if (!req.write(chunk)) return void req.once('drain', pump);
          if (mode === 'declared') return;
        }
      };
      pump();
    });
  }

  it('answers 413 to a Content-Length over 250 MB without waiting for the body', async () => {
    const answer = await oversized(await emu().token(), 'declared');
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).errors[0]).toMatch(/250 MB/);
    expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
  });

  it('answers 413 to a streamed body once it passes 250 MB, holding almost none of it, and keeps serving', async () => {
    // The emulator runs in this process: its memory is this process's, sampled while the body arrives.
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
    try {
      const answer = await oversized(await emu().token(), 'streamed');
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body).errors[0]).toMatch(/250 MB/);
    } finally {
      clearInterval(sampler);
    }
    // Holding the body would take 250 MB; the first 8 MB and stream buffers stay well under 100 MB.
    expect(peak - before).toBeLessThan(100 * 1024 * 1024);
    expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
  }, 60_000);

  it('reads a streamed body of 12 MB whole, past the part it holds in memory', async () => {
    const token = await emu().token();
    const name = 'n'.repeat(12 * 1024 * 1024);
    const u = new URL(`${emu().url}${API}/members`);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'Service-Token': token, 'Content-Type': 'application/json' }, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      const body = Buffer.from(JSON.stringify({ member_data: [{ code: 'BIG1', name }] }));
      // Pieces of 1 MB and no Content-Length: the body goes chunked.
      for (let at = 0; at < body.length; at += 1024 * 1024) req.write(body.subarray(at, at + 1024 * 1024));
      req.end();
    });
    expect(answer.status, answer.body).toBe(200);
    const task = await emu().waitTask(JSON.parse(answer.body).task_id);
    // The name arrived whole: its length is counted to the last character.
    expect(task.messages).toEqual([`member BIG1: name is ${name.length} characters, over the maximum length of 100`]);
  }, 60_000);
});

describe('request bodies that arrive too slowly (408)', () => {
  const emu = useEmulator({ bodyTimeouts: { idleMs: 300, totalMs: 1500 } });

  /** Sends the head and the first bytes of a body on a raw socket, then `more` to keep sending; resolves with all it read once the server closes. */
  function slowBody(token: string, more: (write: (text: string) => void) => void): Promise<string> {
    const u = new URL(emu().url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(u.port), u.hostname);
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (text += c));
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
      socket.write(`POST ${API}/members HTTP/1.1\r\nHost: ${u.host}\r\nService-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"member_data":`);
      more((piece) => {
        if (!socket.destroyed) socket.write(piece);
      });
    });
  }

  it('answers 408 and closes the connection when a body pauses longer than its bound', async () => {
    const text = await slowBody(await emu().token(), () => undefined);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/paused for more than 0\.3 s/);
  });

  it('answers 408 and closes the connection when a body trickles in for longer than its bound, though it never pauses long', async () => {
    let timer: NodeJS.Timeout | undefined;
    const text = await slowBody(await emu().token(), (write) => {
      timer = setInterval(() => write(' '), 50);
    });
    clearInterval(timer);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/took more than 1\.5 s to arrive/);
    expect((await emu().api('GET', '/members')).status).toBe(200);
  });
});

describe('update requests when the clock is set back (DESIGN.md section 6)', () => {
  const emu = useEmulator();
  it('after the clock is set back an hour, the requests just made count for a minute from now, not an hour and a minute', async () => {
    addMember(emu(), 'U009');
    for (let i = 0; i < 5; i += 1) expect((await dryRunUpdate(emu(), 'U009')).status).toBe(200);
    const now = (await emu().control('GET', '/clock')).epoch_ms as number;
    await emu().control('POST', '/clock', { now: companyOf(emu()).clock.format(now - 3_600_000) });
    const refused = await dryRunUpdate(emu(), 'U009');
    expect(refused.status).toBe(429);
    expectRetryAfter(refused.headers, 60);
    await emu().control('POST', '/clock', { advance_seconds: 61 });
    expect((await dryRunUpdate(emu(), 'U009')).status).toBe(200);
  });
});
