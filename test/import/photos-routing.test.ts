/**
 * Which photo goes where (DESIGN.md section 5; api-v2.md 4.4 Members 7): a name with an extension
 * outside the list (jpg, jpeg, gif, png, and the types converted) is invalid, two files for one member
 * are a conflict for both, a code no member has is invalid, and neither is sent; `register` is
 * only for members without a photo and `update` only for members with one, so the wrong mode is a
 * conflict found before sending; `upsert` lists the photos once and sends register (POST) for
 * members without a photo and update (PATCH) for members with one.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import {
  importPhotos, itemFor, photoHashes, photoRequests, plain, resetStats, sha256, startCapturingProxy, writeFiles,
  type CapturingProxy,
} from './photo-helpers.js';

// samples/company: A0001..A0030; A0017, A0024, A0029 and A0030 have no photo.
const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let proxy: CapturingProxy;
let client: WdsClient;
let sentBefore = 0;
const sentCodes = (): string[] => proxy.sent.slice(sentBefore).map((s) => `${s.method} ${s.code}`);
const jpeg = (seed: number): Promise<Buffer> => plain(50, 40, seed).jpeg().toBuffer();

beforeAll(async () => {
  proxy = await startCapturingProxy(emu().url);
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
});

beforeEach(async () => {
  sentBefore = proxy.sent.length;
  await resetStats(emu());
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

describe('refused before sending', () => {
  it('two files for one member: a conflict for both, naming both; neither sent, the photo kept', async () => {
    const dir = await writeFiles(tempDir('wds-photos-'), {
      'A0001.jpg': await jpeg(1),
      'more/A0001.png': await plain(30, 30, 2).png().toBuffer(),
      'A0005.jpg': await jpeg(5),
    });
    const before = await photoHashes(emu());
    const result = await importPhotos(client, dir);
    for (const name of ['/A0001.jpg', 'more/A0001.png']) {
      const item = itemFor(result, name);
      expect(item.outcome).toBe('conflict');
      expect(item.reason).toMatch(/2 files are for member A0001 \(.*A0001\.jpg, .*more\/A0001\.png\); keep one/);
    }
    expect(itemFor(result, 'A0005.jpg').outcome).toBe('ok');
    expect(sentCodes()).toEqual(['PATCH A0005']);
    expect((await photoHashes(emu())).get('A0001')).toBe(before.get('A0001'));
  });

  it('an extension off the list: invalid naming the rule, never sent, and no second file for its member', async () => {
    const dir = await writeFiles(tempDir('wds-photos-'), {
      'A0001.jpg': await jpeg(1), 'A0001.xmp': '<x:xmpmeta/>',
      'A0002.jpg': await jpeg(2), 'A0002.txt': 'taken 2026-03-01',
      // JPEG bytes under names a photo may not have.
      'A0010.txt': await jpeg(10), 'A0011.pdf': await jpeg(11), 'A0012': await jpeg(12),
      // A type the import converts keeps its usual name.
      'A0013.tiff': await plain(40, 40, 13).tiff().toBuffer(),
    });
    const before = await photoHashes(emu());
    const result = await importPhotos(client, dir);
    for (const [name, ext] of [['A0001.xmp', '.xmp'], ['A0002.txt', '.txt'], ['A0010.txt', '.txt'], ['A0011.pdf', '.pdf'], ['/A0012', '(none)']] as const) {
      const item = itemFor(result, name);
      expect(item.outcome, name).toBe('invalid');
      expect(item.reason).toBe(`the extension ${ext} is not accepted for photos (accepted: jpg, jpeg, gif, png; heic, heif, webp, tif, tiff, bmp, avif are converted to JPEG)`);
    }
    expect(itemFor(result, 'A0001.jpg').outcome).toBe('ok');
    expect(itemFor(result, 'A0002.jpg').outcome).toBe('ok');
    expect(itemFor(result, 'A0013.tiff').outcome).toBe('converted');
    expect(sentCodes().sort()).toEqual(['PATCH A0001', 'PATCH A0002', 'PATCH A0013']);
    const after = await photoHashes(emu());
    for (const code of ['A0010', 'A0011', 'A0012']) expect(after.get(code), code).toBe(before.get(code));
  });

  it('a code no member has: invalid, and nothing is sent for it', async () => {
    const dir = await writeFiles(tempDir('wds-photos-'), { 'Z9999.jpg': await jpeg(9), 'A0006.jpg': await jpeg(6) });
    const result = await importPhotos(client, dir);
    const item = itemFor(result, 'Z9999.jpg');
    expect(item.outcome).toBe('invalid');
    expect(item.reason).toBe('no member has the code Z9999 (taken from the file name)');
    expect(sentCodes()).toEqual(['PATCH A0006']);
    expect((await photoHashes(emu())).has('Z9999')).toBe(false);
  });

  it('only unknown codes: no update request at all', async () => {
    const dir = await writeFiles(tempDir('wds-photos-'), { 'X0001.jpg': await jpeg(1), 'X0002.jpg': await jpeg(2) });
    const result = await importPhotos(client, dir);
    expect(result.report.counts.invalid).toBe(2);
    expect(result.requests).toEqual({ register: 0, update: 0, minimum: 0, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 0, update: 0, rateLimited: 0 });
  });
});

describe('modes', () => {
  it('--mode register: a member with a photo is a conflict; one without is registered', async () => {
    const mine = await jpeg(17);
    const dir = await writeFiles(tempDir('wds-photos-'), { 'A0002.jpg': await jpeg(2), 'A0017.jpg': mine });
    const before = await photoHashes(emu());
    const result = await importPhotos(client, dir, { mode: 'register' });
    const conflict = itemFor(result, 'A0002.jpg');
    expect(conflict.outcome).toBe('conflict');
    expect(conflict.reason).toContain('member A0002 already has a photo; register is for members without one');
    expect(itemFor(result, 'A0017.jpg').outcome).toBe('ok');
    expect(sentCodes()).toEqual(['POST A0017']);
    const after = await photoHashes(emu());
    expect(after.get('A0002')).toBe(before.get('A0002'));
    expect(after.get('A0017')).toBe(sha256(mine));
  });

  it('--mode update: a member without a photo is a conflict; one with is updated', async () => {
    const mine = await jpeg(3);
    const dir = await writeFiles(tempDir('wds-photos-'), { 'A0024.jpg': await jpeg(24), 'A0003.jpg': mine });
    const result = await importPhotos(client, dir, { mode: 'update' });
    const conflict = itemFor(result, 'A0024.jpg');
    expect(conflict.outcome).toBe('conflict');
    expect(conflict.reason).toContain('member A0024 has no photo; update replaces an existing one');
    expect(itemFor(result, 'A0003.jpg').outcome).toBe('ok');
    expect(sentCodes()).toEqual(['PATCH A0003']);
    const after = await photoHashes(emu());
    expect(after.get('A0024')).toBeNull();
    expect(after.get('A0003')).toBe(sha256(mine));
  });

  it('upsert (the default): register for members without a photo, update for members with one', async () => {
    const dir = await writeFiles(tempDir('wds-photos-'), {
      'A0004.jpg': await jpeg(4), 'A0007.jpg': await jpeg(7), 'A0029.jpg': await jpeg(29), 'A0030.jpg': await jpeg(30),
    });
    const result = await importPhotos(client, dir);
    expect(result.report.counts.ok).toBe(4);
    expect(result.requests).toEqual({ register: 1, update: 1, minimum: 2, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 1, update: 1, rateLimited: 0 });
    expect(sentCodes().sort()).toEqual(['PATCH A0004', 'PATCH A0007', 'POST A0029', 'POST A0030']);
    expect(itemFor(result, 'A0029.jpg').reason).toBe('registered');
    expect(itemFor(result, 'A0004.jpg').reason).toBe('updated (the earlier photo was replaced)');
  });
});
