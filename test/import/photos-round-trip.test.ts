/**
 * The round trip of issue 5 (Done when; DESIGN.md section 4): the photos of a generated company,
 * exported by the export pipeline to a folder and to a zip, imported with trimming off into a
 * company with the same members and no files, give the same photos, code by code, byte for byte
 * (`/_emulator/state`: file name, size, sha256).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { state, tempDir, type EmulatorState } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import type { WdsClient } from '../../src/index.js';
import { importPhotos } from './photo-helpers.js';

const MEMBERS = 150;
const LIMITS = { update: { limit: 10000, windowMs: 60_000 } };
const source = useEmulator({ generate: { members: MEMBERS, photo_bytes: [20_000, 200_000], attachments_per_member: [0, 0] } });
const target = useEmulator({ generate: { members: MEMBERS, files: false }, limits: { updatesPerMinute: 10000 } });

let from: WdsClient;
let to: WdsClient;

/** Each member's photo as the state gives it, without the time it was stored. */
const photosOf = (s: EmulatorState): Record<string, unknown> =>
  Object.fromEntries(s.members.map((m) => [m.code, m.photo ? { file_name: m.photo.file_name, size: m.photo.size, sha256: m.photo.sha256 } : null]));

beforeAll(() => {
  from = clientFor(source());
  to = clientFor(target(), { limits: LIMITS });
});

afterAll(async () => {
  await from?.close();
  await to?.close();
});

describe.each(['folder', 'zip'] as const)('export to a %s, import into the empty company', (kind) => {
  it('restores every photo byte for byte, in the fewest requests', async () => {
    await target().control('POST', '/reset');
    const out = join(tempDir('wds-round-trip-'), kind === 'zip' ? 'photos.zip' : 'photos');
    const exported = await runExport({ client: from, what: 'photos', out, concurrency: 4 });
    expect(exported.report.problems).toBe(0);
    const original = await state(source());
    const withPhoto = original.members.filter((m) => m.photo).length;
    expect(withPhoto).toBeGreaterThan(100);
    expect(photosOf(await state(target()))).toEqual(Object.fromEntries(original.members.map((m) => [m.code, null])));

    const result = await importPhotos(to, out, { trimming: false });
    expect(result.report.problems).toBe(0);
    expect(result.report.counts.ok).toBe(withPhoto);
    expect(result.requests).toEqual({ register: Math.ceil(withPhoto / 100), update: 0, minimum: Math.ceil(withPhoto / 100), resubmitted: 0 });
    expect(photosOf(await state(target()))).toEqual(photosOf(original));
  });
});
