/**
 * `--dry-run` (DESIGN.md section 5; issue 5, Done when): every check runs and every update request
 * is sent with `Dry-Run: 1`, so the service validates it too, and nothing changes:
 * `/_emulator/state` is the same before and after. The report says what a real run would do: a
 * real run afterwards gives each file the same outcome.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import type { PhotoImportResult } from '../../src/pipelines/photo-import.js';
import { importPhotos, photoRequests, plain, resetStats, startCapturingProxy, writeFiles, type CapturingProxy } from './photo-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });
const state = async (): Promise<EmulatorState> => (await emu().control('GET', '/state')) as EmulatorState;

let proxy: CapturingProxy;
let client: WdsClient;
let dir: string;
let before: EmulatorState;
let dry: PhotoImportResult;

const outcomes = (result: PhotoImportResult): Record<string, string> =>
  Object.fromEntries(result.report.items.map((i) => [i.path!.slice(dir.length + 1), i.outcome]));

beforeAll(async () => {
  proxy = await startCapturingProxy(emu().url);
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
  dir = await writeFiles(tempDir('wds-photos-'), {
    'A0001.jpg': await plain(40, 40, 1).jpeg().toBuffer(), // update
    'A0017.jpg': await plain(40, 40, 17).jpeg().toBuffer(), // register
    'A0002.webp': await plain(40, 40, 2).webp().toBuffer(), // converted, update
    'A0003.jpg': Buffer.from('not a photo'), // invalid
    'Z0001.jpg': await plain(40, 40, 3).jpeg().toBuffer(), // unknown member
    'A0004.jpg': await plain(40, 40, 4).jpeg().toBuffer(), // two files for A0004
    'A0004.png': await plain(40, 40, 4).png().toBuffer(),
  });
  before = await state();
  await resetStats(emu());
  dry = await importPhotos(client, dir, { dryRun: true });
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

describe('--dry-run', () => {
  it('leaves /_emulator/state exactly as it was', async () => {
    expect(await state()).toEqual(before);
  });

  it('sends every update request with Dry-Run: 1, routed as a real run would', async () => {
    expect(proxy.sent.length).toBe(3);
    expect(proxy.sent.every((s) => s.dryRun)).toBe(true);
    expect(proxy.sent.map((s) => `${s.method} ${s.code}`).sort()).toEqual(['PATCH A0001', 'PATCH A0002', 'POST A0017']);
    expect(dry.requests).toEqual({ register: 1, update: 1, minimum: 2, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 1, update: 1, rateLimited: 0 });
  });

  it('reports what a real run would do, and a real run then does it', async () => {
    expect(dry.report.command).toBe('photos import (dry run)');
    const byName = Object.fromEntries(dry.report.items.map((i) => [i.path!.slice(dir.length + 1), i]));
    expect(byName['A0017.jpg']!.reason).toBe('dry run: the service would accept it (register)');
    expect(byName['A0001.jpg']!.reason).toBe('dry run: the service would accept it (update)');
    expect(byName['A0002.webp']!.reason).toMatch(/^converted WEBP to JPEG .*; dry run: the service would accept it \(update\)$/);
    expect(outcomes(dry)).toEqual({
      'A0001.jpg': 'ok', 'A0017.jpg': 'ok', 'A0002.webp': 'converted', 'A0003.jpg': 'invalid', 'Z0001.jpg': 'invalid',
      'A0004.jpg': 'conflict', 'A0004.png': 'conflict',
    });
    const real = await importPhotos(client, dir);
    expect(outcomes(real)).toEqual(outcomes(dry));
    expect(real.requests).toEqual(dry.requests);
    const after = await state();
    const changed = after.members.filter((m) => JSON.stringify(m) !== JSON.stringify(before.members.find((b) => b.code === m.code)));
    expect(changed.map((m) => m.code).sort()).toEqual(['A0001', 'A0002', 'A0017']);
  });
});
