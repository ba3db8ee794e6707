import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor, tempStateFile } from '../helpers/client.js';

// A minute of service time per real second: the client's update window is set to match, held
// 20 % longer than the service's, because on a loaded machine a request may arrive well after it
// took its slot (the default 5 % is 50 ms here).
const emu = useEmulator({ clockSpeed: 60 });
const FAST = { update: { limit: 5, windowMs: 1000 }, marginRatio: 0.2 };
const photo = [{ code: 'NOBODY', base64_face_image: Buffer.from('x').toString('base64') }];

async function freshStats(): Promise<void> {
  await emu().control('POST', '/reset');
}

describe('update limit (5 a minute)', () => {
  it('spaces 12 update requests over at least two windows with zero 429 answers', async () => {
    await freshStats();
    const client = clientFor(emu(), { limits: FAST });
    const started = Date.now();
    for (let i = 0; i < 12; i += 1) await client.faceImages.register(photo, { dryRun: true });
    const elapsed = Date.now() - started;
    const stats = await emu().control('GET', '/stats');
    expect(stats.update_requests).toBe(12);
    expect(stats.rate_limited).toBe(0);
    expect(elapsed).toBeGreaterThanOrEqual(2000);
    await client.close();
  });

  it('gets 429 answers from the service for the same run with its limiter off (so the test above can fail)', async () => {
    await freshStats();
    const client = clientFor(emu(), { limits: false });
    for (let i = 0; i < 12; i += 1) await client.faceImages.register(photo, { dryRun: true });
    const stats = await emu().control('GET', '/stats');
    expect(stats.rate_limited).toBeGreaterThan(0);
    // Every request still went through in the end: the 429s were waited out and retried.
    expect(stats.update_requests).toBe(12);
    await client.close();
  });

  it('shares the window between two clients (two processes) through the state file', async () => {
    await freshStats();
    const stateFile = tempStateFile();
    const a = clientFor(emu(), { limits: FAST, stateFile });
    const b = clientFor(emu(), { limits: FAST, stateFile });
    const started = Date.now();
    await Promise.all([
      (async () => { for (let i = 0; i < 4; i += 1) await a.faceImages.register(photo, { dryRun: true }); })(),
      (async () => { for (let i = 0; i < 4; i += 1) await b.faceImages.register(photo, { dryRun: true }); })(),
    ]);
    const stats = await emu().control('GET', '/stats');
    expect(stats.update_requests).toBe(8);
    expect(stats.rate_limited).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    await Promise.all([a.close(), b.close()]);
  });

  it('tells the caller when it waits on the limit', async () => {
    await freshStats();
    const events: { reason: string; waitMs: number }[] = [];
    const client = clientFor(emu(), { limits: FAST, onWait: (e) => events.push(e) });
    for (let i = 0; i < 6; i += 1) await client.faceImages.register(photo, { dryRun: true });
    expect(events.some((e) => e.reason === 'update-limit' && e.waitMs > 0)).toBe(true);
    await client.close();
  });

  it('does not make reads wait behind a full update window', async () => {
    await freshStats();
    const client = clientFor(emu(), { limits: { update: { limit: 1, windowMs: 60_000 } } });
    await client.faceImages.register(photo, { dryRun: true });
    const started = Date.now();
    await client.faceImages.list();
    expect(Date.now() - started).toBeLessThan(1000);
    await client.close();
  });
});
