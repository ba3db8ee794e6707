/**
 * Zip entries are checked against their CRC-32 and declared sizes as they are read (DESIGN.md
 * section 8). Zips are written by archiver, then patched at the byte level: a stored entry with a
 * flipped byte (what `unzip -t` calls a bad CRC), a deflated entry whose declared size is smaller
 * than its data, and one whose declared size is larger. Imported with the real CLI through a proxy
 * that records every file sent: each bad entry is refused with its reason, the good ones go in, and
 * not one byte of a bad one reaches the service. An entry that goes bad between its check and its
 * request cuts that request, which the service then does not apply. `verify` names a bad entry of
 * an export zip.
 */
import { closeSync, createWriteStream, openSync, writeSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import { ZipArchive } from 'archiver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { clientFor, useClient } from '../helpers/client.js';
import { readZipExport, state, tempDir } from '../helpers/export.js';
import { runCli, type CliRun } from '../helpers/cli-process.js';
import { openSource } from '../../src/sources/open-source.js';
import { runExport } from '../../src/pipelines/export.js';
import { runPhotoImport } from '../../src/pipelines/photo-import.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { buildZip, collect, stored } from './helpers.js';
import { noisyJpeg, plain, sha256, startCapturingProxy, type CapturingProxy } from '../import/photo-helpers.js';
import { QUALIFICATIONS, pdf, recordsOf, sentNames, startAttachmentProxy, type AttachmentProxy } from '../import/attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });
const client = useClient(emu);

interface Entry {
  name: string;
  data: Buffer;
  store: boolean;
}

async function zipOf(path: string, entries: Entry[]): Promise<Buffer> {
  const archive = new ZipArchive({ zlib: { level: 6 } });
  const output = createWriteStream(path);
  archive.pipe(output);
  for (const e of entries) archive.append(e.data, { name: e.name, store: e.store });
  const closed = once(output, 'close');
  await archive.finalize();
  await closed;
  return readFile(path);
}

/** Where an entry's central directory header and its data are. */
function locate(zip: Buffer, name: string): { central: number; data: number; compressedSize: number; flags: number } {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < zip.readUInt16LE(eocd + 10); i += 1) {
    const nameLength = zip.readUInt16LE(at + 28);
    const next = at + 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    if (zip.subarray(at + 46, at + 46 + nameLength).toString('utf8') === name) {
      const local = zip.readUInt32LE(at + 42);
      const data = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      return { central: at, data, compressedSize: zip.readUInt32LE(at + 20), flags: zip.readUInt16LE(at + 8) };
    }
    at = next;
  }
  throw new Error(`no entry ${name}`);
}

/** Flips one byte in the middle of an entry's stored data: its CRC-32 no longer matches. */
function flipByte(zip: Buffer, name: string): void {
  const { data, compressedSize } = locate(zip, name);
  const at = data + Math.floor(compressedSize / 2);
  zip[at] = zip[at]! ^ 0xff;
}

/**
 * Changes an entry's declared uncompressed size everywhere the zip states it: the central
 * directory, and the data descriptor after the data (archiver writes sizes there, bit 3).
 */
function declareSize(zip: Buffer, name: string, size: number): void {
  const { central, data, compressedSize, flags } = locate(zip, name);
  zip.writeUInt32LE(size, central + 24);
  expect(flags & 0x8).toBe(0x8);
  const descriptor = data + compressedSize;
  const signed = zip.readUInt32LE(descriptor) === 0x08074b50;
  zip.writeUInt32LE(size, descriptor + (signed ? 12 : 8));
}

const args = (url: string): string[] => ['--base-url', url, '--consumer-key', KEY, '--consumer-secret', SECRET];

interface ReportItem {
  path: string;
  outcome: string;
  reason?: string;
}

async function reportOf(run: CliRun, file: string): Promise<Map<string, ReportItem>> {
  expect(run.stderr).not.toContain('    at ');
  const { items } = JSON.parse(await readFile(file, 'utf8')) as { items: ReportItem[] };
  return new Map(items.map((i) => [i.path.slice(i.path.lastIndexOf(':') + 1), i]));
}

describe('attachments import of a zip with a bad CRC-32 and lying sizes', () => {
  let proxy: AttachmentProxy;
  beforeAll(async () => {
    proxy = await startAttachmentProxy(emu().url, { decode: true });
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('refuses each bad entry with its reason, sends the good ones, and none of the bad bytes', async () => {
    const dir = tempDir('wds-zipcheck-');
    const files = {
      'A0001/zip-good-1.pdf': pdf(3000),
      'A0010/zip-bad-crc.pdf': pdf(3100),
      'A0012/zip-short-size.pdf': pdf(3200),
      'A0012/zip-long-size.pdf': pdf(3300),
      'A0010/zip-good-2.pdf': pdf(3400),
    };
    const path = join(dir, 'attachments.zip');
    const zip = await zipOf(path, Object.entries(files).map(([name, data]) => ({ name, data, store: name.includes('bad-crc') })));
    flipByte(zip, 'A0010/zip-bad-crc.pdf');
    declareSize(zip, 'A0012/zip-short-size.pdf', 3200 - 100);
    declareSize(zip, 'A0012/zip-long-size.pdf', 3300 + 100);
    await writeFile(path, zip);

    await emu().control('POST', '/stats/reset');
    const report = join(dir, 'report.json');
    const run = await runCli(['attachments', 'import', path, '--sheet', String(QUALIFICATIONS.sheet), '--field', String(QUALIFICATIONS.field), '--json', '--report', report, ...args(proxy.url)]);
    expect(run.code, run.stderr).toBe(3);
    const items = await reportOf(run, report);
    expect(items.get('A0001/zip-good-1.pdf')!.outcome).toBe('ok');
    expect(items.get('A0010/zip-good-2.pdf')!.outcome).toBe('ok');
    expect(items.get('A0010/zip-bad-crc.pdf')).toMatchObject({ outcome: 'invalid', reason: expect.stringContaining('bad CRC-32') });
    expect(items.get('A0012/zip-short-size.pdf')).toMatchObject({ outcome: 'invalid', reason: expect.stringContaining('size differs from the size the zip declares') });
    expect(items.get('A0012/zip-long-size.pdf')).toMatchObject({ outcome: 'invalid', reason: expect.stringContaining('size differs from the size the zip declares (3300 bytes read, 3400 declared)') });

    // Only the good files went over the wire, whole; the service holds none of the bad ones.
    expect(sentNames(proxy).sort()).toEqual(['POST A0001/zip-good-1.pdf', 'POST A0010/zip-good-2.pdf']);
    for (const request of proxy.sent) for (const f of request.files!) expect(f.sha256).toBe(sha256(files[`${f.code}/${f.file_name}` as keyof typeof files]));
    const stats = await emu().control('GET', '/stats');
    expect(stats.update_requests).toBe(1);
    const held = [...(await recordsOf(emu(), QUALIFICATIONS, 'A0010')), ...(await recordsOf(emu(), QUALIFICATIONS, 'A0012'))].map((r) => r.file_name);
    expect(held).toContain('zip-good-2.pdf');
    expect(held.filter((n) => n.startsWith('zip-') && !n.includes('good'))).toEqual([]);
  }, 60_000);
});

describe('photos import of a zip with a bad CRC-32 and a lying size', () => {
  let proxy: CapturingProxy;
  beforeAll(async () => {
    proxy = await startCapturingProxy(emu().url);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('refuses each bad photo with its reason and sends only the good one', async () => {
    const dir = tempDir('wds-zipcheck-');
    const photos = {
      'A0002.jpg': await plain(48, 36, 21).jpeg().toBuffer(),
      'A0003.jpg': await plain(48, 36, 31).jpeg().toBuffer(),
      'A0004.jpg': await plain(48, 36, 41).jpeg().toBuffer(),
    };
    const path = join(dir, 'photos.zip');
    const zip = await zipOf(path, Object.entries(photos).map(([name, data]) => ({ name, data, store: name === 'A0003.jpg' })));
    flipByte(zip, 'A0003.jpg');
    declareSize(zip, 'A0004.jpg', photos['A0004.jpg'].length - 50);
    await writeFile(path, zip);
    const before = new Map((await state(emu())).members.map((m) => [m.code, m.photo?.sha256 ?? null]));

    const report = join(dir, 'report.json');
    const run = await runCli(['photos', 'import', path, '--no-trim', '--json', '--report', report, ...args(proxy.url)]);
    expect(run.code, run.stderr).toBe(3);
    const items = await reportOf(run, report);
    expect(items.get('A0002.jpg')!.outcome).toBe('ok');
    expect(items.get('A0003.jpg')).toMatchObject({ outcome: 'invalid', reason: expect.stringContaining('bad CRC-32') });
    expect(items.get('A0004.jpg')).toMatchObject({ outcome: 'invalid', reason: expect.stringContaining('size differs from the size the zip declares') });

    expect(proxy.sent.map((p) => p.code)).toEqual(['A0002']);
    expect(proxy.sent[0]!.data.equals(photos['A0002.jpg'])).toBe(true);
    const after = new Map((await state(emu())).members.map((m) => [m.code, m.photo?.sha256 ?? null]));
    expect(after.get('A0002')).toBe(sha256(photos['A0002.jpg']));
    expect(after.get('A0003')).toBe(before.get('A0003'));
    expect(after.get('A0004')).toBe(before.get('A0004'));
  }, 60_000);
});

describe('photos import of a zip whose deflated entry holds far more than it declares', () => {
  it('refuses that entry naming the rule and imports the others (yauzl once crashed on it)', async () => {
    const dir = tempDir('wds-zipcheck-');
    // Photos of over 100,000 bytes each take many reads of the zip, and two are checked at once,
    // so reads of the lying entry are queued behind reads of the others: 1,000 bytes are declared for it.
    const photos: Record<string, Buffer> = {};
    for (const n of [5, 6, 7, 8, 9]) photos[`A000${n}.jpg`] = await noisyJpeg(400, 320, n * 10);
    for (const data of Object.values(photos)) expect(data.length).toBeGreaterThan(100_000);
    const path = join(dir, 'photos.zip');
    const zip = await zipOf(path, Object.entries(photos).map(([name, data]) => ({ name, data, store: false })));
    declareSize(zip, 'A0008.jpg', 1000);
    await writeFile(path, zip);
    const before = new Map((await state(emu())).members.map((m) => [m.code, m.photo?.sha256 ?? null]));

    const report = join(dir, 'report.json');
    const run = await runCli(['photos', 'import', path, '--no-trim', '--json', '--report', report, ...args(emu().url)]);
    expect(run.stderr).not.toContain('TypeError');
    expect(run.code, run.stderr).toBe(3);
    const items = await reportOf(run, report);
    expect(items.get('A0008.jpg')).toMatchObject({ outcome: 'invalid', reason: expect.stringContaining('A0008.jpg: size differs from the size the zip declares') });
    const after = new Map((await state(emu())).members.map((m) => [m.code, m.photo?.sha256 ?? null]));
    for (const code of ['A0005', 'A0006', 'A0007', 'A0009']) {
      expect(items.get(`${code}.jpg`)!.outcome, code).toBe('ok');
      expect(after.get(code), code).toBe(sha256(photos[`${code}.jpg`]!));
    }
    expect(after.get('A0008')).toBe(before.get('A0008'));
  }, 60_000);
});

describe('an entry that goes bad after its check', () => {
  it('fails alone: the request it is streamed into is cut, and the other photo goes again without it', async () => {
    const path = join(tempDir('wds-zipcheck-'), 'photos.zip');
    const photos = { 'A0005.jpg': await plain(48, 36, 51).jpeg().toBuffer(), 'A0006.jpg': await plain(48, 36, 61).jpeg().toBuffer() };
    const zip = await zipOf(path, Object.entries(photos).map(([name, data]) => ({ name, data, store: true })));
    const { data, compressedSize } = locate(zip, 'A0006.jpg');
    const at = data + Math.floor(compressedSize / 2);
    const before = await state(emu());
    await emu().control('POST', '/stats/reset');
    const importer = clientFor(emu(), { limits: { update: { limit: 10000, windowMs: 60_000 } } });
    try {
      const result = await runPhotoImport({
        client: importer,
        source: await openSource(path),
        trimming: false,
        // Every photo is checked: the byte changes on disk (the reader holds the zip open) before the first request.
        onProgress: (progress) => {
          if (progress.stage !== 'check' || progress.total === undefined) return;
          const fd = openSync(path, 'r+');
          writeSync(fd, Buffer.from([zip[at]! ^ 0xff]), 0, 1, at);
          closeSync(fd);
        },
      });
      const a0006 = result.report.items.find((i) => i.code === 'A0006')!;
      expect(a0006.outcome).toBe('failed');
      expect(a0006.reason).toContain('A0006.jpg could not be read again');
      expect(a0006.reason).toContain('bad CRC-32');
      expect(result.report.items.find((i) => i.code === 'A0005')!.outcome).toBe('ok');
    } finally {
      await importer.close();
    }
    // The first request was started and then cut, and a second carried A0005 alone.
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests['PATCH /members/face_image'] ?? 0).toBe(2);
    const after = await state(emu());
    const photoOf = (s: typeof before, code: string) => s.members.find((m) => m.code === code)!.photo?.sha256;
    expect(photoOf(after, 'A0006')).toBe(photoOf(before, 'A0006'));
    expect(photoOf(after, 'A0005')).toBe(sha256(photos['A0005.jpg']));
  }, 60_000);
});

describe('the source and verify', () => {
  it('a bad entry fails to read naming the file and the reason; a whole read never yields all of its bytes', async () => {
    const path = join(tempDir('wds-zipcheck-'), 'one.zip');
    const data = Buffer.alloc(300_000);
    for (let i = 0; i < data.length; i += 1) data[i] = (i * 7) & 0xff;
    const zip = await zipOf(path, [{ name: 'A0001/big.pdf', data, store: true }]);
    flipByte(zip, 'A0001/big.pdf');
    await writeFile(path, zip);
    const source = await openSource(path);
    const [file] = (await collect(source)).files;
    await expect(file!.read(1_000_000)).rejects.toThrow(`${path}:A0001/big.pdf: bad CRC-32 (the bytes read give`);
    let streamed = 0;
    await expect((async () => {
      for await (const chunk of await file!.open()) streamed += (chunk as Buffer).length;
    })()).rejects.toThrow('bad CRC-32');
    expect(streamed).toBeGreaterThan(0);
    expect(streamed).toBeLessThan(data.length);
    await source.close();
  });

  it('headers that disagree refuse that entry alone, before a byte of it is read', async () => {
    const content = (n: number): Buffer => Buffer.alloc(2000, n);
    const zip = buildZip([
      stored('A0001.jpg', content(1)),
      stored('A0002.jpg', content(2)),
      stored('A0003.jpg', content(3)),
      // Stored, yet 1,000 bytes in the zip for 2,000 declared: yauzl's own check stops the whole archive here.
      stored('A0004.jpg', content(4).subarray(0, 1000), { size: 2000, crc: 0x1234 }),
      stored('A0005.jpg', content(5)),
    ]);
    // The local headers of A0002 and A0003 (written in order, 30 bytes + 9 of name + 2,000 each) disagree with the directory.
    const localOf = (n: number): number => (n - 1) * (30 + 9 + 2000);
    zip.writeUInt32LE(0xdeadbeef, localOf(2) + 14);
    zip.writeUInt32LE(1999, localOf(3) + 22);
    const path = join(tempDir('wds-zipcheck-'), 'headers.zip');
    await writeFile(path, zip);
    const source = await openSource(path);
    const files = new Map((await collect(source)).files.map((f) => [f.relPath, f]));
    expect([...files.keys()]).toEqual(['A0001.jpg', 'A0002.jpg', 'A0003.jpg', 'A0004.jpg', 'A0005.jpg']);
    expect((await files.get('A0001.jpg')!.read(10_000)).equals(content(1))).toBe(true);
    await expect(files.get('A0002.jpg')!.read(10_000)).rejects.toThrow(`${path}:A0002.jpg: bad CRC-32 (the local header says 0xdeadbeef`);
    await expect(files.get('A0003.jpg')!.read(10_000)).rejects.toThrow(`${path}:A0003.jpg: size differs from the size the zip declares (the local header says 1999 bytes uncompressed`);
    await expect(files.get('A0004.jpg')!.open()).rejects.toThrow(`${path}:A0004.jpg: size differs from the size the zip declares (stored without compression, yet 1000 bytes in the zip for 2000 declared)`);
    expect((await files.get('A0005.jpg')!.read(10_000)).equals(content(5))).toBe(true);
    await source.close();
  });

  it('verify names an export zip entry whose bytes differ from its CRC-32, and exits 3', async () => {
    const dir = tempDir('wds-zipcheck-');
    const path = join(dir, 'photos.zip');
    await runExport({ client: client(), what: 'photos', out: path, concurrency: 2 });
    const zip = await readFile(path);
    const { manifest } = await readZipExport(path);
    const victim = manifest[0]!.path;
    // Photos are stored without compression in an export zip: a flipped byte keeps the size.
    flipByte(zip, victim);
    await writeFile(path, zip);
    const result = await verifyExport(path);
    expect(result.problems).toEqual([{ path: victim, problem: expect.stringContaining('bad CRC-32') }]);
    const run = await runCli(['verify', path]);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toContain(`${victim}: `);
    expect(run.stdout).toContain('bad CRC-32');
  }, 60_000);
});
