/**
 * Starts the emulator in-process on port 0 for one test file and closes it on teardown. The clock
 * starts at a fixed time of day, away from the 01:00-01:30 maintenance window, so that tests do not
 * depend on when CI runs.
 */
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type RunningEmulator, type EmulatorOptions } from '../../src/emulator/index.js';
import { DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET } from '../../src/emulator/config.js';

export const KEY = DEFAULT_CONSUMER_KEY;
export const SECRET = DEFAULT_CONSUMER_SECRET;
export const API = '/api/v2.0';

export interface TestEmulator extends RunningEmulator {
  /** Raw API call with a token: method, path under /api/v2.0, JSON body. */
  api: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: any; headers: Headers }>;
  /** A fresh access token of the default company. */
  token: () => Promise<string>;
  control: (method: string, path: string, body?: unknown) => Promise<any>;
  /** Polls a task until it is final. */
  waitTask: (taskId: number) => Promise<{ id: number; status: string; messages: string[] }>;
}

export async function launch(options: EmulatorOptions = {}): Promise<TestEmulator> {
  const running = await startEmulator({ port: 0, clockStart: '2026-04-01 10:00:00', taskTiming: { waitMs: 10, runMs: 10, perItemMs: 0 }, ...options });
  let cached: string | undefined;
  const token = async (): Promise<string> => {
    const res = await fetch(`${running.url}${API}/token`, {
      method: 'POST',
      headers: {
        Authorization: `Basic ${Buffer.from(`${options.consumerKey ?? KEY}:${options.consumerSecret ?? SECRET}`).toString('base64')}`,
        'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8',
      },
      body: 'grant_type=client_credentials',
    });
    if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { access_token: string }).access_token;
  };
  const api: TestEmulator['api'] = async (method, path, body, headers = {}) => {
    cached ??= await token();
    const res = await fetch(`${running.url}${API}${path}`, {
      method,
      headers: { 'Service-Token': cached, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed, headers: res.headers };
  };
  const control: TestEmulator['control'] = async (method, path, body) => {
    const res = await fetch(`${running.url}/_emulator${path}`, {
      method,
      headers: body !== undefined ? { 'Content-Type': 'application/json' } : {},
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return res.json();
  };
  const waitTask: TestEmulator['waitTask'] = async (taskId) => {
    for (let i = 0; i < 2000; i += 1) {
      const { status, body } = await api('GET', `/tasks/${taskId}`);
      if (status !== 200) throw new Error(`task ${taskId}: ${status} ${JSON.stringify(body)}`);
      if (['OK', 'NG', 'ERROR'].includes(body.status)) return body;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`task ${taskId} did not end`);
  };
  return { ...running, api, token, control, waitTask };
}

/**
 * One emulator for the test file, started before its tests and closed after them. `startMs`
 * bounds its start where the default hook timeout would not do (a large generated company on a
 * loaded machine).
 */
export function useEmulator(options: EmulatorOptions = {}, startMs?: number): () => TestEmulator {
  let emu: TestEmulator | undefined;
  beforeAll(async () => {
    emu = await launch(options);
  }, startMs);
  afterAll(async () => {
    await emu?.close();
  });
  return () => {
    if (!emu) throw new Error('the emulator has not started');
    return emu;
  };
}
