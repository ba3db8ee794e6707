/**
 * The photo import sends the route whose last request is the smallest last: the run's last request
 * and the checking before it are what nothing overlaps, so the run ends sooner, with no more
 * requests than before. Here 105 photos for members without one (100, then 5) and 30 replacing a
 * photo: the 30 go first, and the 5 last (register first, the old order, ended on the 30).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import { importPhotos, photoRequests, plain, resetStats, writeFiles } from './photo-helpers.js';

const emu = useEmulator({ generate: { members: 200, files: false }, clockSpeed: 60 });
const code = (n: number): string => `G${String(n).padStart(6, '0')}`;

let client: WdsClient;
let images: Buffer[];

async function folderFor(from: number, to: number): Promise<string> {
  const files: Record<string, Buffer> = {};
  for (let n = from; n <= to; n += 1) files[`${code(n)}.jpg`] = images[n % images.length]!;
  return writeFiles(tempDir('wds-photos-'), files);
}

beforeAll(async () => {
  client = clientFor(emu(), { limits: { update: { limit: 5, windowMs: 1000 } } });
  images = await Promise.all([1, 2, 3].map((seed) => plain(40, 40, seed).jpeg().toBuffer()));
});

afterAll(async () => {
  await client?.close();
});

describe('the smallest last request goes last', () => {
  it('30 replacements, then 100 and 5 registrations: three requests, the 5 last', async () => {
    // Members 1 to 30 get a photo first, so that the second run replaces theirs.
    expect((await importPhotos(client, await folderFor(1, 30))).report.counts.ok).toBe(30);
    await resetStats(emu());
    const result = await importPhotos(client, await folderFor(1, 135));
    expect(result.report.problems).toBe(0);
    expect(result.requests).toEqual({ register: 2, update: 1, minimum: 3, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 2, update: 1, rateLimited: 0 });
    // The report lists the files request by request, in the order they were sent.
    const routes = result.report.items.map((i) => (i.reason?.startsWith('registered') ? 'register' : i.reason?.startsWith('updated') ? 'update' : i.reason));
    expect(routes.slice(0, 30)).toEqual(Array(30).fill('update'));
    expect(routes.slice(30)).toEqual(Array(105).fill('register'));
    expect(result.report.items.slice(-5).map((i) => i.code)).toEqual([131, 132, 133, 134, 135].map(code));
  });
});
