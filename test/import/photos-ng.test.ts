/**
 * When the service ends a task NG (DESIGN.md section 5), its messages are attached to the files
 * they name, with the service's own words; an NG task changes nothing, so the other files of that
 * request are sent once more in a request of their own and arrive. Two ways the service refuses a
 * file our checks passed, both made here in the emulator from the progress hook after a first batch:
 * the member got a photo between our listing and the register request, and the member was deleted
 * between our listing and the update request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { companyOf, setPhoto } from '../helpers/fixtures.js';
import { removeMembers } from '../../src/emulator/routes/member-removal.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import { importPhotos, itemFor, photoHashes, photoRequests, plain, resetStats, sha256, writeFiles } from './photo-helpers.js';

const emu = useEmulator({ generate: { members: 300, files: false }, limits: { updatesPerMinute: 10000 } });
const code = (n: number): string => `G${String(n).padStart(6, '0')}`;

let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), { limits: { update: { limit: 10000, windowMs: 60_000 } } });
});

afterAll(async () => {
  await client?.close();
});

describe('NG attribution', () => {
  it('a member given a photo after the listing: that file failed with the service message, the other 99 of its batch arrive', async () => {
    const files: Record<string, Buffer> = {};
    const images = await Promise.all([1, 2, 3].map((seed) => plain(40, 30, seed).jpeg().toBuffer()));
    for (let n = 1; n <= 200; n += 1) files[`${code(n)}.jpg`] = images[n % 3]!;
    const dir = await writeFiles(tempDir('wds-photos-'), files);
    const theirs = await plain(60, 60, 42).jpeg().toBuffer();
    await resetStats(emu());
    const result = await importPhotos(client, dir, {
      onProgress: (p) => {
        // After the first batch of 100: someone registers G000150's photo in the service.
        if (p.stage === 'send' && p.done === 100) setPhoto(emu(), code(150), theirs);
      },
    });

    const failed = itemFor(result, `${code(150)}.jpg`);
    expect(failed.outcome).toBe('failed');
    expect(failed.reason).toBe(`member ${code(150)}: already has a face image; register is only for members without one (use partial update)`);
    expect(result.report.counts).toMatchObject({ ok: 199, failed: 1, invalid: 0, conflict: 0 });
    // Batch 1, batch 2 (NG), batch 2 again without G000150.
    expect(result.requests).toEqual({ register: 3, update: 0, minimum: 2, resubmitted: 99 });
    expect(await photoRequests(emu())).toEqual({ register: 3, update: 0, rateLimited: 0 });
    const hashes = await photoHashes(emu());
    expect(hashes.get(code(150)), 'their photo is kept').toBe(sha256(theirs));
    for (let n = 101; n <= 200; n += 1) if (n !== 150) expect(hashes.get(code(n)), code(n)).toBe(sha256(files[`${code(n)}.jpg`]!));
  });

  it('a member deleted after the listing: that file failed with the service message, the other 49 of its batch arrive', async () => {
    const files: Record<string, Buffer> = {};
    // 50 members without a photo (one register batch) and 50 with one (one update batch).
    for (let n = 201; n <= 250; n += 1) files[`${code(n)}.jpg`] = await plain(30, 30, n).jpeg().toBuffer();
    for (let n = 1; n <= 50; n += 1) files[`${code(n)}.jpg`] = await plain(30, 30, n + 7).jpeg().toBuffer();
    const dir = await writeFiles(tempDir('wds-photos-'), files);
    await resetStats(emu());
    const result = await importPhotos(client, dir, {
      onProgress: (p) => {
        // Between the register batch and the update batch, G000020 leaves the company.
        if (p.stage === 'send' && p.done === 50) removeMembers(companyOf(emu()), [code(20)]);
      },
    });
    const failed = itemFor(result, `${code(20)}.jpg`);
    expect(failed.outcome).toBe('failed');
    expect(failed.reason).toBe(`member ${code(20)}: no member has this code`);
    expect(result.report.counts).toMatchObject({ ok: 99, failed: 1 });
    expect(result.requests).toEqual({ register: 1, update: 2, minimum: 2, resubmitted: 49 });
    expect(await photoRequests(emu())).toEqual({ register: 1, update: 2, rateLimited: 0 });
    const hashes = await photoHashes(emu());
    expect(hashes.has(code(20))).toBe(false);
    for (const [name, data] of Object.entries(files)) {
      const c = name.slice(0, -4);
      if (c !== code(20)) expect(hashes.get(c), c).toBe(sha256(data));
    }
  });
});
