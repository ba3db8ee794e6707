import { describe, expect, it } from 'vitest';
import { useEmulator, API, KEY, SECRET } from '../helpers/emulator.js';

const emu = useEmulator();

function basic(key: string, secret: string): string {
  return `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;
}

async function issue(init: { auth?: string; body?: string; type?: string }): Promise<Response> {
  const headers: Record<string, string> = { 'Content-Type': init.type ?? 'application/x-www-form-urlencoded;charset=UTF-8' };
  if (init.auth) headers.Authorization = init.auth;
  return fetch(`${emu().url}${API}/token`, { method: 'POST', headers, body: init.body ?? 'grant_type=client_credentials' });
}

describe('token issuance (api-v2.md 5)', () => {
  it('answers access_token, Bearer and expire_in 3600 for good credentials', async () => {
    const res = await issue({ auth: basic(KEY, SECRET) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.token_type).toBe('Bearer');
    expect(body.expire_in).toBe(3600);
    expect(typeof body.access_token).toBe('string');
  });

  it('refuses a grant_type other than client_credentials with 400', async () => {
    const res = await issue({ auth: basic(KEY, SECRET), body: 'grant_type=password' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: string[] }).errors[0]).toMatch(/grant_type/);
  });

  it('refuses a JSON body with 400: the body is a form', async () => {
    const res = await issue({ auth: basic(KEY, SECRET), type: 'application/json', body: '{"grant_type":"client_credentials"}' });
    expect(res.status).toBe(400);
  });

  it('refuses a wrong secret, an unknown key and a missing header with 401', async () => {
    expect((await issue({ auth: basic(KEY, 'wrong') })).status).toBe(401);
    expect((await issue({ auth: basic('nobody', SECRET) })).status).toBe(401);
    expect((await issue({})).status).toBe(401);
  });

  it('needs a live Service-Token on every other call', async () => {
    const none = await fetch(`${emu().url}${API}/tasks/1`);
    expect(none.status).toBe(401);
    const bad = await fetch(`${emu().url}${API}/tasks/1`, { headers: { 'Service-Token': 'made-up' } });
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as { errors: string[] }).errors).toHaveLength(1);
  });

  it('expires a token after one hour of service time', async () => {
    const token = await emu().token();
    const before = await fetch(`${emu().url}${API}/tasks/999`, { headers: { 'Service-Token': token } });
    expect(before.status).toBe(404);
    await emu().control('POST', '/clock', { advance_seconds: 3601 });
    const after = await fetch(`${emu().url}${API}/tasks/999`, { headers: { 'Service-Token': token } });
    expect(after.status).toBe(401);
  });
});

describe('routing', () => {
  it('answers 404 for an unknown path and 405 with Allow for a known path and another method', async () => {
    const unknown = await emu().api('GET', '/no_such_thing');
    expect(unknown.status).toBe(404);
    const wrong = await emu().api('DELETE', '/members/face_image');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toContain('GET');
  });

  it('answers a non-integer id with 400 naming the parameter', async () => {
    const res = await emu().api('GET', '/tasks/abc');
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/task_id/);
  });
});
