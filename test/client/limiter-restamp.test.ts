/**
 * The client's windows against the service's own, at the window's very edge: a request is stamped
 * again when its answer comes, so a service that counts a request well after it left (here the
 * emulator's API latency, 400 ms before it counts) still never answers 429, with the default
 * margin of 5 % of these 1 s windows (50 ms). A limiter that kept the stamp taken when the request
 * left would send the sixth update 650 ms after the service counted the first five, inside the
 * service's window, and get a 429.
 *
 * Then a request queued behind others on the limiter is not let go once its stop signal fired,
 * even when the window has room by its turn.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor, tempStateFile } from '../helpers/client.js';
import { Limiter } from '../../src/client/limiter.js';
import type { WdsClient } from '../../src/index.js';

// A minute of service time per real second, and the client's update window to match.
const emu = useEmulator({ clockSpeed: 60, maintenance: false });
const WINDOW = { update: { limit: 5, windowMs: 1000 } };
const photo = [{ code: 'NOBODY', base64_face_image: Buffer.from('x').toString('base64') }];
const LATE_MS = 400;

const register = (client: WdsClient): Promise<unknown> => client.faceImages.register(photo, { dryRun: true });

/** Five updates at once, each counted by the service LATE_MS after it arrived; then the sixth, counted at once. */
async function lateFiveThenOne(first: WdsClient, sixth: WdsClient): Promise<{ sixthAfterMs: number }> {
  await emu().control('POST', '/faults', { api: { latency_ms: LATE_MS, path_contains: 'face_image' } });
  const started = Date.now();
  await Promise.all(Array.from({ length: 5 }, () => register(first)));
  await emu().control('DELETE', '/faults');
  await register(sixth);
  return { sixthAfterMs: Date.now() - started };
}

async function fresh(): Promise<void> {
  await emu().control('POST', '/reset');
  await emu().control('DELETE', '/faults');
  await emu().control('POST', '/stats/reset');
}

describe('a request is stamped again when its answer comes', () => {
  it('the sixth update goes at the edge of the window the service counted, with no 429 (three rounds)', async () => {
    await fresh();
    const client = clientFor(emu(), { limits: WINDOW });
    // A token first, so that issuing it does not sit in the slowed requests.
    await client.faceImages.list();
    for (let round = 0; round < 3; round += 1) {
      const { sixthAfterMs } = await lateFiveThenOne(client, client);
      // It waited for the window from the first five's answers, not from when they left.
      expect(sixthAfterMs).toBeGreaterThanOrEqual(LATE_MS + 1000);
      const stats = await emu().control('GET', '/stats');
      expect(stats.rate_limited, `round ${round + 1}`).toBe(0);
      // The next round's window starts empty.
      await new Promise((resolve) => setTimeout(resolve, 1100));
    }
    expect((await emu().control('GET', '/stats')).update_requests).toBe(18);
    await client.close();
  });

  it('two clients sharing the state file: the second sees the first one\'s answers and waits for them', async () => {
    await fresh();
    const stateFile = tempStateFile();
    const a = clientFor(emu(), { limits: WINDOW, stateFile });
    const b = clientFor(emu(), { limits: WINDOW, stateFile });
    await Promise.all([a.faceImages.list(), b.faceImages.list()]);
    const { sixthAfterMs } = await lateFiveThenOne(a, b);
    expect(sixthAfterMs).toBeGreaterThanOrEqual(LATE_MS + 1000);
    const stats = await emu().control('GET', '/stats');
    expect(stats.update_requests).toBe(6);
    expect(stats.rate_limited).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('a stopped request is not let go', () => {
  it('one queued behind another throws the stop reason at its turn, though the window has room then', async () => {
    const limiter = new Limiter({ windows: { update: { limit: 2, windowMs: 1000 }, request: { limit: 100, windowMs: 1000 }, token: { limit: 100, windowMs: 1000 } } });
    await limiter.acquire(['update']);
    await limiter.acquire(['update']);
    // The third waits for the window; the fourth is queued behind it and, at its turn, the first
    // two are gone from the window: it would be let go at once.
    const third = limiter.acquire(['update']);
    const stop = new AbortController();
    const fourth = limiter.acquire(['update'], stop.signal);
    fourth.catch(() => undefined);
    stop.abort('SIGINT');
    await third;
    await expect(fourth).rejects.toBe('SIGINT');
    // The third goes as soon as the first leaves the window; the second, taken a moment after the
    // first (longer on a loaded machine), leaves it well within half a window more, and the third
    // stays in it for a whole one.
    await new Promise((resolve) => setTimeout(resolve, 500));
    // The third alone: the fourth took nothing.
    expect(await limiter.used('update')).toBe(1);
  });
});
