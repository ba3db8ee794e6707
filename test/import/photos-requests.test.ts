/**
 * The photo import sends the fewest update requests the service allows (issue 5, Done when):
 * ceil(photos / 100) per route, counted by the emulator itself (`requests['POST
 * /members/face_image']` and PATCH), and never meets a 429: the emulator runs its clock 60 times
 * faster with the service's own limit of 5 update requests a minute, and the client keeps the same
 * limit over a window of 1,000 ms (one emulator minute).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import { importPhotos, photoHashes, photoRequests, plain, resetStats, stats, writeFiles } from './photo-helpers.js';

const MEMBERS = 1500;
const emu = useEmulator({ generate: { members: MEMBERS, files: false }, clockSpeed: 60 });
const code = (n: number): string => `G${String(n).padStart(6, '0')}`;

let client: WdsClient;
let images: Buffer[];

/** A folder with one small, real JPEG for each member from `from` to `to`. */
async function folderFor(from: number, to: number): Promise<string> {
  const files: Record<string, Buffer> = {};
  for (let n = from; n <= to; n += 1) files[`${code(n)}.jpg`] = images[n % images.length]!;
  return writeFiles(tempDir('wds-photos-'), files);
}

beforeAll(async () => {
  // The client's update window is one emulator minute; every other limit is the service's.
  client = clientFor(emu(), { limits: { update: { limit: 5, windowMs: 1000 } } });
  images = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((seed) => plain(40, 40, seed).jpeg().toBuffer()));
});

afterAll(async () => {
  await client?.close();
});

describe('requests sent equal the minimum, with no 429', () => {
  it('250 photos for members without one: 3 register requests', async () => {
    await resetStats(emu());
    const result = await importPhotos(client, await folderFor(1, 250));
    expect(result.report.counts.ok).toBe(250);
    expect(result.report.problems).toBe(0);
    expect(result.requests).toEqual({ register: 3, update: 0, minimum: 3, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 3, update: 0, rateLimited: 0 });
    const hashes = await photoHashes(emu());
    for (let n = 1; n <= 250; n += 1) expect(hashes.get(code(n)), code(n)).not.toBeNull();
    expect(hashes.get(code(251))).toBeNull();
  });

  it('a mix, 130 with a photo and 120 without: ceil per route, 2 updates and 2 registers', async () => {
    await resetStats(emu());
    const before = await photoHashes(emu());
    const result = await importPhotos(client, await folderFor(121, 370));
    expect(result.report.problems).toBe(0);
    expect(result.requests).toEqual({ register: 2, update: 2, minimum: 4, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 2, update: 2, rateLimited: 0 });
    const reasons = new Map(result.report.items.map((i) => [i.code, i.reason]));
    expect(reasons.get(code(121))).toContain('updated');
    expect(reasons.get(code(251))).toBe('registered');
    const after = await photoHashes(emu());
    expect(after.get(code(370))).not.toBeNull();
    // The photos of members outside the import did not move.
    for (let n = 1; n <= 120; n += 1) expect(after.get(code(n))).toBe(before.get(code(n)));
  });

  // 25 s on a quiet machine (1,100 photos checked); a clean clone's CI beside other work took over 30.
  it('1,100 photos: 11 requests over 3 windows of the limit, and the service never answers 429', { timeout: 120_000 }, async () => {
    await resetStats(emu());
    const result = await importPhotos(client, await folderFor(371, 1470));
    expect(result.report.counts.ok).toBe(1100);
    expect(result.requests).toEqual({ register: 11, update: 0, minimum: 11, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 11, update: 0, rateLimited: 0 });
    expect(client.transport.counters.rateLimited).toBe(0);
    expect((await stats(emu())).update_requests).toBe(11);
  });
});
