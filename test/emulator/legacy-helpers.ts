/**
 * Plain-fetch calls of the legacy interface against the in-process emulator, for the
 * test/emulator/legacy-*.test.ts files (no client code: an emulator bug must not hide behind it).
 */
import type { TestEmulator } from '../helpers/emulator.js';
import { KEY, SECRET } from '../helpers/emulator.js';

export interface V1Answer {
  status: number;
  body: any;
  headers: Headers;
}

export interface V1Options {
  version?: string;
  method?: string;
  token?: string | null;
  /** Sent as is instead of JSON.stringify(body). */
  raw?: string;
  contentType?: string;
}

export async function v1Raw(emu: TestEmulator, path: string, body: unknown = {}, options: V1Options = {}): Promise<V1Answer> {
  const headers: Record<string, string> = { 'Content-Type': options.contentType ?? 'application/json' };
  if (options.token) headers['X-SERVICE-TOKEN'] = options.token;
  const method = options.method ?? 'POST';
  const res = await fetch(`${emu.url}/api/${options.version ?? 'v1.2'}${path}`, {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : options.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

export async function v1Token(emu: TestEmulator, key = KEY, secret = SECRET): Promise<string> {
  const res = await v1Raw(emu, '/get_token', { consumer_key: key, consumer_secret: secret });
  if (res.status !== 200) throw new Error(`get_token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

/** A caller with one token at a time (a new one once the service clock expired it): `call(path, body, options)`. */
export function v1Caller(emu: () => TestEmulator): (path: string, body?: unknown, options?: V1Options) => Promise<V1Answer> {
  let token: string | undefined;
  return async (path, body = {}, options = {}) => {
    token ??= await v1Token(emu());
    const res = await v1Raw(emu(), path, body, { token, ...options });
    if (res.status !== 401) return res;
    token = await v1Token(emu());
    return v1Raw(emu(), path, body, { token, ...options });
  };
}

/** Polls operation 11 until the task is final. */
export async function waitV1Task(call: ReturnType<typeof v1Caller>, progressId: number): Promise<{ progress_id: number; status: string; errors?: string[] }> {
  for (let i = 0; i < 2000; i += 1) {
    const res = await call(`/task/${progressId}`);
    if (res.status !== 200) throw new Error(`task ${progressId}: ${res.status} ${JSON.stringify(res.body)}`);
    if (['OK', 'NG', 'ERROR'].includes(res.body.status)) return res.body;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`task ${progressId} did not end`);
}

/** Sends an update and waits for its task; answers the final task. */
export async function v1Update(call: ReturnType<typeof v1Caller>, path: string, body: unknown): Promise<{ progress_id: number; status: string; errors?: string[] }> {
  const res = await call(path, body);
  if (res.status !== 200 || typeof res.body.progress_id !== 'number') throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return waitV1Task(call, res.body.progress_id);
}

/** A v2 GET with a token of its own, renewed after a reset forgot it: the v2 side of consistency checks. */
export function v2Getter(emu: () => TestEmulator): (path: string) => Promise<any> {
  let token: string | undefined;
  return async (path) => {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      token ??= await emu().token();
      const res = await emu().api('GET', path, undefined, { 'Service-Token': token });
      if (res.status === 200) return res.body;
      if (res.status !== 401) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      token = undefined;
    }
    throw new Error(`GET ${path}: 401 twice`);
  };
}

/** Unlimited v1 windows, so a file of tests does not spend the 60-an-hour budget. */
export const OPEN_LIMITS = { legacyRequestsPerHour: 1_000_000, legacyTokensPerHour: 1_000_000, requestsPerHour: 1_000_000, updatesPerMinute: 1_000_000, tokensPerHour: 1_000_000 };
