/**
 * The photo import starts and ends with its smallest requests, with no more requests than greedy
 * batching: the first waits for its own check and the limit's window runs from its answer, the
 * last one's upload and task end the run. Here 105 photos for members without one and 30
 * replacing one: 5 registrations go first, then 100, and the 30 replacements last. The order is
 * read from the service: each request's photos carry the time its task ran.
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
  images = await Promise.all([1, 2, 3].map((seed) => plain(40, 40, seed).jpeg().toBuffer()));
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

    const at = await updatedAt();
    const times = (codes: number[]): string[] => [...new Set(codes.map((n) => at.get(code(n))!))];
    const [first, second, last] = [times(range(31, 35)), times(range(36, 135)), times(range(1, 30))];
    // One task for each group, in this order (greedy batching would have sent 31 to 130 first).
    for (const group of [first, second, last]) expect(group).toHaveLength(1);
    expect(first[0]! < second[0]!).toBe(true);
    expect(second[0]! < last[0]!).toBe(true);
  });
});
