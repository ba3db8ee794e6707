/**
 * The photo import starts and ends with its smallest requests, with no more requests than greedy
 * batching: the first waits for its own check and the limit's window runs from its answer, the
 * last one's upload and task end the run. Here 105 photos for members without one and 30
 * replacing one: 5 registrations go first (the lightest of the 105), then 100, and the 30
 * replacements last. The order is read from the service: each request's photos carry the time
 * its task ran.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import { importPhotos, photoRequests, plain, resetStats, writeFiles } from './photo-helpers.js';

const emu = useEmulator({ generate: { members: 200, files: false }, clockSpeed: 60 });
const code = (n: number): string => `G${String(n).padStart(6, '0')}`;
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

let client: WdsClient;
let images: Buffer[];

async function folderFor(from: number, to: number): Promise<string> {
  const files: Record<string, Buffer> = {};
  for (const n of range(from, to)) files[`${code(n)}.jpg`] = images[n % images.length]!;
  return writeFiles(tempDir('wds-photos-'), files);
}

/** When each member's photo was last written, by the service. */
async function updatedAt(): Promise<Map<string, string>> {
  const state = (await emu().control('GET', '/state')) as EmulatorState;
  return new Map(state.members.filter((m) => m.photo).map((m) => [m.code, (m.photo as { updated_at: string }).updated_at]));
}

beforeAll(async () => {
  client = clientFor(emu(), { limits: { update: { limit: 5, windowMs: 1000 } } });
  // Three sizes of photo, so that the lightest can be told apart.
  images = await Promise.all([40, 120, 200].map((side, seed) => plain(side, side, seed + 1).jpeg().toBuffer()));
});

afterAll(async () => {
  await client?.close();
});

describe('the first and the last requests are the smallest', () => {
  it('105 registrations as 5, then 100, and 30 replacements last: three requests', async () => {
    // Members 1 to 30 get a photo first, so that the second run replaces theirs.
    expect((await importPhotos(client, await folderFor(1, 30))).report.counts.ok).toBe(30);
    await resetStats(emu());
    const result = await importPhotos(client, await folderFor(1, 135));
    expect(result.report.problems).toBe(0);
    expect(result.requests).toEqual({ register: 2, update: 1, minimum: 3, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 2, update: 1, rateLimited: 0 });

    // Members by the time their photo was written: one group per request, in the order sent.
    const at = await updatedAt();
    const groups = new Map<string, number[]>();
    for (const n of range(1, 135)) groups.set(at.get(code(n))!, [...(groups.get(at.get(code(n))!) ?? []), n]);
    const [first, second, last] = [...groups].sort(([a], [b]) => a.localeCompare(b)).map(([, members]) => members);
    expect([first!.length, second!.length, last!.length]).toEqual([5, 100, 30]);
    expect(last).toEqual(range(1, 30));
    // The first request took the lightest of the registrations (greedy batching would have sent 31 to 130 first).
    const size = (n: number): number => images[n % images.length]!.length;
    expect(Math.max(...first!.map(size))).toBeLessThanOrEqual(Math.min(...second!.map(size)));
    expect(first!.every((n) => n >= 31)).toBe(true);
  });
});
