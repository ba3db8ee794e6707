/**
 * The legacy interface's budget: 60 requests an hour and 5 tokens in 60 minutes, kept by the
 * client in windows shared across processes (a state file keyed by consumer key), so the 61st
 * request waits instead of drawing a 429; a 429 that still comes is waited out and sent again.
 * The emulator's clock runs 600 times faster (an hour is 6 s), the client's windows to match,
 * held 20 % longer because a request may arrive well after it took its slot on a loaded machine.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { LegacyClient, type LegacyClientOptions, type LegacyWaitEvent } from '../../src/index.js';

const SPEED = 600;
const HOUR_MS = 3_600_000 / SPEED;
const emu = useEmulator({ seed: 'samples/company', maintenance: false, clockSpeed: SPEED });
const FAST = { request: { limit: 60, windowMs: HOUR_MS }, token: { limit: 5, windowMs: HOUR_MS }, marginRatio: 0.2 };

let cache: string;
const savedCache = process.env.XDG_CACHE_HOME;
beforeEach(async () => {
  // A fresh company (its v1 windows included) and a cache folder of this test's own.
  await emu().control('POST', '/reset');
  cache = mkdtempSync(join(tmpdir(), 'wds-legacy-cache-'));
  process.env.XDG_CACHE_HOME = cache;
});
afterEach(() => {
  if (savedCache === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = savedCache;
});

function legacy(options: Partial<LegacyClientOptions> = {}): LegacyClient {
  return new LegacyClient({ baseUrl: emu().url, consumerKey: KEY, consumerSecret: SECRET, limits: FAST, ...options });
}

async function stats(): Promise<{ rate_limited: number; tokens_issued: number; requests: Record<string, number> }> {
  return emu().control('GET', '/stats');
}

describe('the legacy budget of 60 requests an hour', () => {
  it('holds the 61st request back until the hour has room, shared by two clients through the default state file', async () => {
    const waitsA: LegacyWaitEvent[] = [];
    const waitsB: LegacyWaitEvent[] = [];
    const a = legacy({ onWait: (e) => waitsA.push(e) });
    const b = legacy({ onWait: (e) => waitsB.push(e) });
    const started = Date.now();
    for (let i = 0; i < 60; i += 1) await a.departments.list();
    expect(waitsA.filter((w) => w.reason === 'request-limit')).toEqual([]);
    // Another client of the same company (another process): its first request is the 61st.
    await b.departments.list();
    const elapsed = Date.now() - started;
    const held = waitsB.filter((w) => w.reason === 'request-limit');
    expect(held.length).toBeGreaterThanOrEqual(1);
    expect(held[0]!.ms).toBeGreaterThan(0);
    expect(held[0]!.message).toMatch(/^waiting \d+\.\d s: 60 legacy requests per 6 s reached$/);
    expect(elapsed).toBeGreaterThanOrEqual(HOUR_MS);
    const s = await stats();
    expect(s.rate_limited).toBe(0);
    expect(s.requests['POST /v1/department']).toBe(61);
    // The windows live in a file of their own, beside (not in) WdsClient's.
    expect(readdirSync(join(cache, 'wds-files')).filter((f) => f.endsWith('.json'))).toEqual([expect.stringMatching(/^legacy-limits-[0-9a-f]{16}\.json$/)]);
    await Promise.all([a.close(), b.close()]);
  }, 60_000);

  it('with its windows off, meets the service\'s 429, waits out its Retry-After and sends the request again', async () => {
    const waits: LegacyWaitEvent[] = [];
    const client = legacy({ limits: false, onWait: (e) => waits.push(e) });
    for (let i = 0; i < 61; i += 1) await client.departments.list();
    const s = await stats();
    expect(s.rate_limited).toBeGreaterThanOrEqual(1);
    // Every request went through in the end; the refused ones were counted as they arrived too.
    expect(s.requests['POST /v1/department']).toBe(61 + s.rate_limited);
    const limited = waits.filter((w) => w.reason === 'rate-limited');
    expect(limited.length).toBe(s.rate_limited);
    for (const w of limited) expect(w.ms % 1000).toBe(0);
    await client.close();
  }, 60_000);
});

describe('polling within the budget', () => {
  it('reads a sheet asynchronously with the hour nearly spent: its polls wait for room instead of drawing a 429', async () => {
    const waits: LegacyWaitEvent[] = [];
    const client = legacy({ onWait: (e) => waits.push(e), poll: { intervalMs: 10, maxIntervalMs: 50 } });
    for (let i = 0; i < 58; i += 1) await client.departments.list();
    const polls: string[] = [];
    const { records } = await client.sheets.readAsync(0, { onPoll: (status) => polls.push(status) });
    expect(records.length).toBe(30);
    expect(polls.at(-1)).toBe('OK');
    expect(waits.some((w) => w.reason === 'request-limit')).toBe(true);
    expect(waits.some((w) => w.reason === 'poll')).toBe(true);
    const s = await stats();
    expect(s.rate_limited).toBe(0);
    // One request per poll: the preset, each poll of its progress, and the result.
    expect(s.requests['POST /v1/sheet/:sheet_id/task/:progress_id']).toBe(polls.length);
    expect(s.requests['POST /v1/sheet/:sheet_id/preset']).toBe(1);
    expect(s.requests['POST /v1/sheet/:sheet_id/get/:progress_id']).toBe(1);
    await client.close();
  }, 60_000);
});

describe('the legacy budget of 5 tokens in 60 minutes', () => {
  it('holds the 6th token back instead of drawing a 429', async () => {
    const waits: LegacyWaitEvent[] = [];
    const clients = Array.from({ length: 6 }, () => legacy({ onWait: (e) => waits.push(e) }));
    const started = Date.now();
    for (const client of clients) await client.users.list();
    expect(Date.now() - started).toBeGreaterThanOrEqual(HOUR_MS);
    expect(waits.filter((w) => w.reason === 'token-limit').length).toBeGreaterThanOrEqual(1);
    const s = await stats();
    expect(s.tokens_issued).toBe(6);
    expect(s.rate_limited).toBe(0);
    await Promise.all(clients.map((c) => c.close()));
  }, 60_000);
});
