/**
 * Photos from zips (DESIGN.md section 5): entries that escape the root (`../`, absolute paths),
 * links, names that are neither UTF-8 nor Shift_JIS, and zip bombs are each refused with their
 * reason and never sent; Shift_JIS names (zips made on Japanese Windows) are decoded and their
 * photos imported with the rest; nothing already on the service is lost. One zip is written by
 * archiver, as real tools write them; the quirks archiver cannot write are built byte by byte.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { SHAIN_SHASHIN, SHAIN_SHASHIN_SJIS, archiverZip, buildZip, deflated, deflatedZeros, stored } from '../sources/helpers.js';
import { NOT_UTF8_NOR_SJIS } from '../../src/sources/zip.js';
import type { WdsClient } from '../../src/index.js';
import type { PhotoImportResult } from '../../src/pipelines/photo-import.js';
import { importPhotos, itemFor, photoHashes, plain, sha256, startCapturingProxy, type CapturingProxy } from './photo-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let proxy: CapturingProxy;
let client: WdsClient;
const photos: Record<string, Buffer> = {};
let before: Map<string, string | null>;

/** Members whose photo each run may change; every other photo must stay as it was. */
function expectOthersKept(after: Map<string, string | null>, changed: string[]): void {
  for (const [code, hash] of before) if (!changed.includes(code)) expect(after.get(code), code).toBe(hash);
}

beforeAll(async () => {
  proxy = await startCapturingProxy(emu().url);
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
  for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9]) photos[`A000${n}`] = await plain(48, 36, n * 11).jpeg().toBuffer();
  photos.A0002 = await plain(48, 36, 22).png().toBuffer();
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

describe('a zip written by archiver', () => {
  let result: PhotoImportResult;
  let sentFrom = 0;

  beforeAll(async () => {
    const zip = join(tempDir('wds-zip-'), 'photos.zip');
    await archiverZip(zip, [
      { name: 'A0001.jpg', data: photos.A0001! },
      { name: 'staff/A0002.png', data: photos.A0002! },
      { name: 'A0003.jpg', linkTo: '/etc/passwd' },
      { name: '__MACOSX/._A0001.jpg', data: 'resource fork' },
    ]);
    before = await photoHashes(emu());
    sentFrom = proxy.sent.length;
    result = await importPhotos(client, zip);
  });

  it('imports the photos at any depth, sent as they are', async () => {
    expect(itemFor(result, 'photos.zip:A0001.jpg').outcome).toBe('ok');
    expect(itemFor(result, 'photos.zip:staff/A0002.png').outcome).toBe('ok');
    const sent = new Map(proxy.sent.slice(sentFrom).map((s) => [s.code, sha256(s.data)]));
    expect(sent).toEqual(new Map([['A0001', sha256(photos.A0001!)], ['A0002', sha256(photos.A0002!)]]));
    expect((await photoHashes(emu())).get('A0001')).toBe(sha256(photos.A0001!));
  });

  it('refuses the link with its reason, sends nothing for it, and skips the macOS resource fork', async () => {
    const link = itemFor(result, 'photos.zip:A0003.jpg');
    expect(link.outcome).toBe('invalid');
    expect(link.reason).toBe('is a link; links are not followed');
    // The report names the member the refused file was for.
    expect(link.code).toBe('A0003');
    expect(result.report.items.some((i) => (i.path ?? '').includes('__MACOSX'))).toBe(false);
    expect(result.report.items).toHaveLength(3);
    const after = await photoHashes(emu());
    expect(after.get('A0003')).toBe(before.get('A0003'));
    expectOthersKept(after, ['A0001', 'A0002']);
  });
});

describe('a zip with entries archiver cannot write', () => {
  let result: PhotoImportResult;
  let sentFrom = 0;

  beforeAll(async () => {
    const bomb = await deflatedZeros(20 * 1024 * 1024);
    const zip = join(tempDir('wds-zip-'), 'quirks.zip');
    await writeFile(zip, buildZip([
      stored('../A0004.jpg', photos.A0004!),
      stored('/tmp/A0005.jpg', photos.A0005!),
      stored(Buffer.concat([SHAIN_SHASHIN_SJIS, Buffer.from('/A0006.jpg')]), photos.A0006!),
      // 0x81 0x20 is neither UTF-8 nor a Shift_JIS character.
      stored(Buffer.from([0x81, 0x20, 0x41, 0x30, 0x30, 0x30, 0x39, 0x2e, 0x6a, 0x70, 0x67]), photos.A0009!),
      { name: 'A0007.jpg', data: bomb.data, method: 8, size: 20 * 1024 * 1024, crc: bomb.crc },
      deflated('A0008.jpg', photos.A0008!),
    ]));
    before = await photoHashes(emu());
    sentFrom = proxy.sent.length;
    result = await importPhotos(client, zip);
  });

  it.each([
    ['quirks.zip:../A0004.jpg', 'the path goes up with `..`; entries must stay inside the zip'],
    ['quirks.zip:/tmp/A0005.jpg', 'the path is absolute; entries must stay inside the zip'],
    ['quirks.zip:A0007.jpg', /compressed \d+:1 .* a likely zip bomb; not inflated/],
    ['A0009.jpg', NOT_UTF8_NOR_SJIS],
  ])('%s is refused with its reason', (where, reason) => {
    const item = itemFor(result, where);
    expect(item.outcome).toBe('invalid');
    if (typeof reason === 'string') expect(item.reason).toBe(reason);
    else expect(item.reason).toMatch(reason);
  });

  it('names the member of a refused entry whose name could be read, and no member for one whose name could not', () => {
    expect(itemFor(result, 'quirks.zip:A0007.jpg').code).toBe('A0007');
    expect(itemFor(result, 'A0009.jpg').code).toBe('');
  });

  it('imports the Shift_JIS-named folder and the plain entry, and sends nothing else', async () => {
    const sjis = itemFor(result, `quirks.zip:${SHAIN_SHASHIN}/A0006.jpg`);
    expect(sjis.outcome, sjis.reason).toBe('ok');
    expect(itemFor(result, 'quirks.zip:A0008.jpg').outcome).toBe('ok');
    expect(proxy.sent.slice(sentFrom).map((s) => s.code).sort()).toEqual(['A0006', 'A0008']);
    const after = await photoHashes(emu());
    expect(after.get('A0006')).toBe(sha256(photos.A0006!));
    expect(after.get('A0008')).toBe(sha256(photos.A0008!));
    expectOthersKept(after, ['A0006', 'A0008']);
    expect(result.report.counts).toMatchObject({ ok: 2, invalid: 4 });
  });
});
