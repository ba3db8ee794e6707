/**
 * The legacy interface's protocol over HTTP (api-v1-legacy.md 4, 5, 8, 9; wire-format.md, Legacy
 * v1.x): the token exchange, X-SERVICE-TOKEN, POST only, the version gates, the error shape, the
 * limits of v1 (60 requests an hour, 5 tokens in 60 minutes) on the service clock, and maintenance.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET, type TestEmulator } from '../helpers/emulator.js';
import { OPEN_LIMITS, v1Caller, v1Raw, v1Token } from './legacy-helpers.js';

const ALL_PATHS: [number, string, string][] = [
  [2, '/user', 'v1.0'], [3, '/user/overwrite', 'v1.0'], [4, '/user/add', 'v1.0'],
  [5, '/department', 'v1.0'], [6, '/department/overwrite', 'v1.0'], [7, '/department/add', 'v1.0'],
  [8, '/sheet/1', 'v1.0'], [9, '/sheet/1/data/overwrite', 'v1.0'], [10, '/sheet/1/data/add', 'v1.0'],
  [11, '/task/1', 'v1.0'], [12, '/sheet/1/preset', 'v1.1'], [13, '/sheet/1/task/abc', 'v1.1'],
  [14, '/sheet/1/get/abc', 'v1.1'], [15, '/sheet/1/data/update', 'v1.2'], [16, '/sheet/1/data/delete', 'v1.2'],
];
const VERSIONS = ['v1.0', 'v1.1', 'v1.2'];

describe('token and X-SERVICE-TOKEN', () => {
  const emu = useEmulator({ seed: 'samples/company', limits: OPEN_LIMITS });

  it('exchanges the consumer key and secret in the body for a token whose expires_in is the string "3600"', async () => {
    for (const version of VERSIONS) {
      const res = await v1Raw(emu(), '/get_token', { consumer_key: KEY, consumer_secret: SECRET }, { version });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ access_token: expect.any(String), expires_in: '3600' });
      const users = await v1Raw(emu(), '/user', {}, { version, token: res.body.access_token });
      expect(users.status).toBe(200);
    }
  });

  it('answers 401 with the NG shape for a wrong secret or an unknown key, without a token', async () => {
    for (const body of [{ consumer_key: KEY, consumer_secret: 'wrong' }, { consumer_key: 'nobody', consumer_secret: SECRET }]) {
      const res = await v1Raw(emu(), '/get_token', body);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ status: 'NG', errors: [expect.stringMatching(/consumer key or consumer secret/)] });
      expect(JSON.stringify(res.body)).not.toContain(SECRET);
    }
  });

  it('answers 400 naming the field for a token body with a missing or extra field', async () => {
    const missing = await v1Raw(emu(), '/get_token', { consumer_key: KEY });
    expect(missing.status).toBe(400);
    expect(missing.body.errors.join(' ')).toMatch(/consumer_secret/);
    const extra = await v1Raw(emu(), '/get_token', { consumer_key: KEY, consumer_secret: SECRET, grant_type: 'x' });
    expect(extra.status).toBe(400);
    expect(extra.body.errors.join(' ')).toMatch(/unknown field "grant_type"/);
  });

  it('answers 401 without a token, with an unknown token, with a v2 token, and once the token expired on the service clock', async () => {
    expect((await v1Raw(emu(), '/user', {})).status).toBe(401);
    const unknown = await v1Raw(emu(), '/user', {}, { token: 'not-a-token' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ status: 'NG', errors: [expect.stringMatching(/not valid or has expired/)] });
    expect((await v1Raw(emu(), '/user', {}, { token: await emu().token() })).status).toBe(401);

    const token = await v1Token(emu());
    await emu().control('POST', '/clock', { advance_seconds: 3599 });
    expect((await v1Raw(emu(), '/user', {}, { token })).status).toBe(200);
    await emu().control('POST', '/clock', { advance_seconds: 2 });
    expect((await v1Raw(emu(), '/user', {}, { token })).status).toBe(401);
  });
});

describe('reset', () => {
  const emu = useEmulator({ seed: 'samples/company', limits: OPEN_LIMITS });

  it('forgets the v1 tokens with the v2 ones, as the data goes back to the seed', async () => {
    const token = await v1Token(emu());
    expect((await v1Raw(emu(), '/user', {}, { token })).status).toBe(200);
    await emu().control('POST', '/reset');
    expect((await v1Raw(emu(), '/user', {}, { token })).status).toBe(401);
  });
});

describe('paths, methods and version gates', () => {
  const emu = useEmulator({ seed: 'samples/company', limits: OPEN_LIMITS });
  const call = v1Caller(emu);

  it('serves each operation from its version on and answers 404 before it', async () => {
    const order = (v: string) => VERSIONS.indexOf(v);
    for (const [number, path, since] of ALL_PATHS) {
      for (const version of VERSIONS) {
        const res = await call(path, {}, { version });
        if (order(version) < order(since)) {
          expect(res.status, `operation ${number} on ${version}`).toBe(404);
          expect(res.body).toEqual({ status: 'NG', errors: [expect.stringMatching(/no such path/)] });
        } else {
          // Served: whatever the empty body earns, it is not the unknown-path answer.
          expect(res.body.errors?.join(' ') ?? '', `operation ${number} on ${version}`).not.toMatch(/no such path/);
        }
      }
    }
  });

  it('answers 404 for unknown paths and unknown versions', async () => {
    for (const [path, version] of [['/users', 'v1.2'], ['/sheet/1/data', 'v1.2'], ['/user', 'v1.3'], ['/user', 'v1.9'], ['/user', 'v1']] as const) {
      const res = await call(path, {}, { version });
      expect(res.status, `${version}${path}`).toBe(404);
      expect(res.body.status).toBe('NG');
      if (version !== 'v1.2') expect(res.body.errors[0]).toContain('versions: v1.0, v1.1, v1.2');
    }
  });

  it('answers 405 with Allow: POST for any other method', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const res = await call('/user', {}, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.body).toEqual({ status: 'NG', errors: [expect.stringMatching(/every legacy operation is POST/)] });
    }
  });

  it('answers 400 in the NG shape for a body that is not JSON, not an object, or of another type', async () => {
    const notJson = await call('/user', undefined, { raw: '{"users": [' });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toEqual({ status: 'NG', errors: [expect.stringMatching(/not valid JSON/)] });
    const array = await call('/user', undefined, { raw: '[]' });
    expect(array.status).toBe(400);
    const text = await call('/user', undefined, { raw: 'users', contentType: 'text/plain' });
    expect(text.status).toBe(400);
    expect(text.body.errors[0]).toMatch(/Content-Type: application\/json/);
  });

  it('takes an empty body as {}', async () => {
    const res = await call('/department', undefined, { raw: '' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('OK');
  });

  it('refuses a dryrun other than 0 or 1, in the query or the body', async () => {
    const query = await call('/user?dryrun=yes');
    expect(query.status).toBe(400);
    expect(query.body.errors[0]).toMatch(/dryrun must be 0 or 1/);
    const body = await call('/user', { dryrun: true });
    expect(body.status).toBe(400);
  });
});

describe('limits of v1 on the service clock', () => {
  const emu = useEmulator({ seed: 'samples/company' });

  const fastClock = (e: TestEmulator) => e.control('POST', '/clock', { speed: 600 });

  it('issues 5 tokens in 60 minutes and then answers 429 with Retry-After in real seconds, until the window moves on', async () => {
    await fastClock(emu());
    const body = { consumer_key: KEY, consumer_secret: SECRET };
    for (let i = 0; i < 5; i += 1) expect((await v1Raw(emu(), '/get_token', body)).status).toBe(200);
    const refused = await v1Raw(emu(), '/get_token', body);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ status: 'NG', errors: ['more than 5 tokens issued in 60 minutes'] });
    // Up to an hour of service time at 600x: at most 6 real seconds, at least 1.
    const retry = Number(refused.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(6);
    // v2 keeps its own token window.
    await expect(emu().token()).resolves.toEqual(expect.any(String));
    await emu().control('POST', '/clock', { advance_seconds: 3600 });
    expect((await v1Raw(emu(), '/get_token', body)).status).toBe(200);
  });

  it('answers 60 requests an hour and the 61st with 429 and Retry-After; v2 is not counted, and the hour passes', async () => {
    await emu().control('POST', '/reset');
    await fastClock(emu());
    const token = await v1Token(emu());
    for (let i = 0; i < 60; i += 1) {
      const res = await v1Raw(emu(), i % 2 ? '/department' : '/task/1', {}, { token });
      expect(res.status, `request ${i + 1}`).not.toBe(429);
    }
    expect((await emu().api('GET', '/departments')).status).toBe(200);
    const refused = await v1Raw(emu(), '/department', {}, { token });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ status: 'NG', errors: ['more than 60 requests in an hour'] });
    const retry = Number(refused.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(6);
    const stats = await emu().control('GET', '/stats');
    expect(stats.rate_limited).toBeGreaterThanOrEqual(1);

    // Retry-After is honest: once that many real seconds have passed at 600x, the request is answered.
    await emu().control('POST', '/clock', { advance_seconds: retry * 600 });
    const later = await v1Raw(emu(), '/department', {}, { token: await v1Token(emu()) });
    expect(later.status).toBe(200);
  });
});

describe('maintenance window', () => {
  const emu = useEmulator({ seed: 'samples/company', limits: OPEN_LIMITS });

  it('answers 503 with Retry-After between 01:00 and 01:30 service time, token exchange included', async () => {
    const token = await v1Token(emu());
    await emu().control('POST', '/clock', { now: '2026-04-02 01:10:00' });
    const res = await v1Raw(emu(), '/user', {}, { token });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'NG', errors: [expect.stringMatching(/maintenance/)] });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(1000);
    expect((await v1Raw(emu(), '/get_token', { consumer_key: KEY, consumer_secret: SECRET })).status).toBe(503);
    await emu().control('POST', '/clock', { now: '2026-04-02 01:30:00' });
    expect((await v1Raw(emu(), '/get_token', { consumer_key: KEY, consumer_secret: SECRET })).status).toBe(200);
  });
});

describe('injected faults (control API) on the legacy interface', () => {
  const emu = useEmulator({ seed: 'samples/company', limits: OPEN_LIMITS });
  const call = v1Caller(emu);
  const departments = async () => (await emu().api('GET', '/departments')).body.department_data.map((d: any) => d.code);
  const add = (code: string) => call('/department/add', { departments: [{ department_code1: code, department_name1: `Fault ${code}` }] });

  it('a 503 before the service handles an update changes nothing; a 504 after it loses only the answer', async () => {
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [503], path_contains: '/api/v1.2/department/add', max_faults: 1 } });
    const refused = await add('8801');
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ status: 'NG', errors: ['server error 503 (injected)'] });

    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [504], path_contains: '/api/v1.2/department/add', max_faults: 1 } });
    const lost = await add('8802');
    expect(lost.status).toBe(504);
    await emu().control('GET', '/tasks/drain');
    const codes = await departments();
    expect(codes).toContain('8802');
    expect(codes).not.toContain('8801');
  });

  it('a connection reset cuts the answer of a v1 request only, not of v2', async () => {
    expect((await call('/department')).status).toBe(200);
    await emu().control('POST', '/faults', { api: { error_rate: 0, reset_rate: 1, path_contains: '/api/v1' } });
    await expect(call('/department')).rejects.toThrow();
    expect((await emu().api('GET', '/departments')).status).toBe(200);
    await emu().control('DELETE', '/faults');
    expect((await call('/department')).status).toBe(200);
  });
});
