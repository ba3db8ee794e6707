import { afterEach, describe, expect, it } from 'vitest';
import { useEmulator, API, type TestEmulator } from '../helpers/emulator.js';
import { addMember, b64, jpeg, setPhoto } from '../helpers/fixtures.js';
import { rawRequest } from '../helpers/raw-http.js';

async function getWith(e: TestEmulator, token: string, path: string): Promise<Response> {
  return fetch(`${e.url}${API}${path}`, { headers: { 'Service-Token': token } });
}

async function tokenStatus(e: TestEmulator): Promise<Response> {
  return fetch(`${e.url}${API}/token`, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${Buffer.from('demo-key:demo-secret').toString('base64')}`,
      'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8',
    },
    body: 'grant_type=client_credentials',
  });
}

const setClock = (e: TestEmulator, now: string) => e.control('POST', '/clock', { now });

describe('daily maintenance 01:00-01:30 (api-v2.md 8)', () => {
  const emu = useEmulator();

  it('answers the API and token issuance 503 with Retry-After during the backup, and normally from 01:30', async () => {
    await setClock(emu(), '2026-04-02 00:55:00');
    const token = await emu().token();
    expect((await getWith(emu(), token, '/members/face_image')).status).toBe(200);

    await setClock(emu(), '2026-04-02 01:10:00');
    const api = await getWith(emu(), token, '/members/face_image');
    expect(api.status).toBe(503);
    // Twenty minutes are left of the window.
    expect(Number(api.headers.get('retry-after'))).toBeGreaterThan(1190);
    expect(Number(api.headers.get('retry-after'))).toBeLessThanOrEqual(1200);
    expect(((await api.json()) as { errors: string[] }).errors[0]).toMatch(/maintenance/);
    const issued = await tokenStatus(emu());
    expect(issued.status).toBe(503);
    expect(Number(issued.headers.get('retry-after'))).toBeGreaterThan(0);

    await setClock(emu(), '2026-04-02 01:29:59');
    expect((await getWith(emu(), token, '/members/face_image')).status).toBe(503);
    await setClock(emu(), '2026-04-02 01:30:00');
    expect((await getWith(emu(), token, '/members/face_image')).status).toBe(200);
    expect((await tokenStatus(emu())).status).toBe(200);
  });

  it('answers 503 rather than 401 to a request whose token expired before the window', async () => {
    await setClock(emu(), '2026-04-03 01:05:00');
    const res = await getWith(emu(), 'a-token-from-yesterday', '/members/face_image');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBeTruthy();
    await setClock(emu(), '2026-04-03 10:00:00');
  });
});

describe('maintenance switched off', () => {
  const emu = useEmulator({ maintenance: false });

  it('answers normally at 01:10', async () => {
    await setClock(emu(), '2026-04-02 01:10:00');
    expect((await tokenStatus(emu())).status).toBe(200);
    expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
  });
});

describe('fault injection (DESIGN.md section 6)', () => {
  const emu = useEmulator({ limits: { updatesPerMinute: 1000 } });
  afterEach(async () => {
    await emu().control('DELETE', '/faults');
  });
  const faults = (body: unknown) => emu().control('POST', '/faults', body);
  // The test helper issues its token on its first call: that must happen before faults are on.
  const warm = () => emu().api('GET', '/tasks/1');

  /** A stored photo of `size` bytes and its download URL. */
  async function stored(code: string, size: number): Promise<{ url: string; data: Buffer }> {
    const data = Buffer.alloc(size, 7);
    data.set([0xff, 0xd8, 0xff], 0);
    addMember(emu(), code);
    setPhoto(emu(), code, data);
    const listing = await emu().api('GET', '/members/face_image');
    return { url: listing.body.member_data.find((m: { code: string }) => m.code === code).download_url, data };
  }

  it('answers 500, 503 and 504 with errors for api error_rate 1', async () => {
    await warm();
    await faults({ api: { error_rate: 1, seed: 7 } });
    const seen = new Set<number>();
    for (let i = 0; i < 40; i += 1) {
      const res = await emu().api('GET', '/members/face_image');
      expect([500, 503, 504]).toContain(res.status);
      expect(res.body.errors).toHaveLength(1);
      seen.add(res.status);
    }
    expect([...seen].sort()).toEqual([500, 503, 504]);
  });

  it('answers 504 to an update after the work was done, and 500 before it', async () => {
    addMember(emu(), 'F001');
    addMember(emu(), 'F002');
    await warm();
    const stats = async () => (await emu().control('GET', '/stats')).update_requests as number;
    const photoOf = async (code: string) => (await emu().control('GET', '/state')).members.find((m: { code: string }) => m.code === code).photo;
    const body = async (code: string) => ({ enable_trimming: false, member_data: [{ code, base64_face_image: b64(await jpeg()) }] });

    const before = await stats();
    await faults({ api: { error_rate: 1, error_statuses: [504], method: 'POST' } });
    const timedOut = await emu().api('POST', '/members/face_image', await body('F001'));
    expect(timedOut.status).toBe(504);
    await faults({ api: { error_rate: 0 } });
    await emu().control('GET', '/tasks/drain');
    expect(await stats()).toBe(before + 1);
    expect(await photoOf('F001')).not.toBeNull();

    await faults({ api: { error_rate: 1, error_statuses: [500], method: 'POST' } });
    expect((await emu().api('POST', '/members/face_image', await body('F002'))).status).toBe(500);
    await faults({ api: { error_rate: 0 } });
    await emu().control('GET', '/tasks/drain');
    expect(await stats()).toBe(before + 1);
    expect(await photoOf('F002')).toBeNull();
  });

  it('cuts a storage download mid-body for reset_rate 1', async () => {
    const { url, data } = await stored('F003', 200_000);
    await faults({ storage: { reset_rate: 1 } });
    const res = await rawRequest(url);
    expect(res.complete).toBe(false);
    expect(res.body.length).toBeLessThan(data.length);
    await expect(fetch(url).then((r) => r.arrayBuffer())).rejects.toThrow();
  });

  it('sends a body shorter than its Content-Length for truncate_rate 1', async () => {
    const { url, data } = await stored('F004', 200_000);
    await faults({ storage: { truncate_rate: 1 } });
    const res = await rawRequest(url);
    expect(res.status).toBe(200);
    expect(Number(res.headers['content-length'])).toBe(data.length);
    expect(res.complete).toBe(false);
    expect(res.body.length).toBeGreaterThan(0);
    expect(res.body.length).toBeLessThan(data.length);
    expect(res.body.equals(data.subarray(0, res.body.length))).toBe(true);
  });

  it('throttles storage to bandwidth_bytes_per_s', async () => {
    const { url, data } = await stored('F005', 200_000);
    const fast = await rawRequest(url);
    expect(fast.body.equals(data)).toBe(true);
    await faults({ storage: { bandwidth_bytes_per_s: 1_000_000 } });
    const slow = await rawRequest(url);
    expect(slow.body.equals(data)).toBe(true);
    expect(slow.ms).toBeGreaterThanOrEqual(150);
  });

  it('adds latency_ms to API answers, and 0 switches it off', async () => {
    await warm();
    await faults({ api: { latency_ms: 400 } });
    let started = Date.now();
    expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    await faults({ api: { latency_ms: 0 } });
    started = Date.now();
    expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(380);
  });

  it('switches a fault off with the value 0', async () => {
    await warm();
    await faults({ api: { error_rate: 1 } });
    expect((await emu().api('GET', '/members/face_image')).status).toBeGreaterThanOrEqual(500);
    await faults({ api: { error_rate: 0 } });
    for (let i = 0; i < 5; i += 1) expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
  });

  it('injects at most max_faults faults, and only on paths holding path_contains', async () => {
    await warm();
    await faults({ api: { error_rate: 1, max_faults: 2, path_contains: '/tasks/' } });
    expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
    expect((await emu().api('GET', '/tasks/777')).status).toBeGreaterThanOrEqual(500);
    expect((await emu().api('GET', '/tasks/777')).status).toBeGreaterThanOrEqual(500);
    expect((await emu().api('GET', '/tasks/777')).status).toBe(404);
    expect((await emu().api('GET', '/tasks/777')).status).toBe(404);
  });

  it('applies storage faults to storage only, and API faults to the API only', async () => {
    const { url } = await stored('F006', 1000);
    await faults({ storage: { error_rate: 1, error_statuses: [503] } });
    expect((await fetch(url)).status).toBe(503);
    expect((await emu().api('GET', '/members/face_image')).status).toBe(200);
    await emu().control('DELETE', '/faults');
    await faults({ api: { error_rate: 1 } });
    expect((await fetch(url)).status).toBe(200);
  });
});
