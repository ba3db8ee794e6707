/**
 * `transport.counters.waitedMs` (an import's `waited_ms`): the time the client was held back by
 * its limits, the lock of their shared file included, with overlapping waits counted once.
 */
import { writeFileSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor, tempStateFile } from '../helpers/client.js';

// A minute of service time per real second, and the client's update window set to match.
const emu = useEmulator({ clockSpeed: 60, maintenance: false });
const photo = [{ code: 'NOBODY', base64_face_image: Buffer.from('x').toString('base64') }];

describe('waitedMs', () => {
  it('counts the wait for the state file\'s lock, held by another run', async () => {
    const stateFile = tempStateFile();
    const client = clientFor(emu(), { stateFile });
    await client.faceImages.list();
    const before = client.transport.counters.waitedMs;
    // Another process holds the lock for a second, as while it updates the windows.
    writeFileSync(`${stateFile}.lock`, '');
    const release = setTimeout(() => rmSync(`${stateFile}.lock`, { force: true }), 1000);
    const started = Date.now();
    await client.faceImages.list();
    const took = Date.now() - started;
    clearTimeout(release);
    const waited = client.transport.counters.waitedMs - before;
    expect(waited).toBeGreaterThanOrEqual(800);
    expect(waited).toBeLessThanOrEqual(took + 1);
    await client.close();
  });

  it('counts three requests held by one full window once, not once each', async () => {
    await emu().control('POST', '/reset');
    const client = clientFor(emu(), { limits: { update: { limit: 1, windowMs: 1200 } } });
    await client.faceImages.register(photo, { dryRun: true });
    const started = Date.now();
    // Each waits for the one before it: about 1.3, 2.5 and 3.8 s, 7.6 s if added up.
    await Promise.all([0, 1, 2].map(() => client.faceImages.register(photo, { dryRun: true })));
    const took = Date.now() - started;
    const waited = client.transport.counters.waitedMs;
    expect(waited).toBeGreaterThanOrEqual(2500);
    expect(waited).toBeLessThanOrEqual(took + 1);
    expect((await emu().control('GET', '/stats')).rate_limited).toBe(0);
    await client.close();
  }, 30_000);
});
