/**
 * A zip as an import source (DESIGN.md section 5): entries escaping the root, links, names neither
 * UTF-8 nor Shift_JIS, encrypted entries and zip bombs refused one by one while the rest is read;
 * Shift_JIS names decoded; directories, dotfiles and `__MACOSX/` skipped; an unreadable or
 * truncated zip a fatal error naming it.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32, deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { NOT_UTF8_NOR_SJIS, ZipSource } from '../../src/sources/zip.js';
import { tempDir } from '../helpers/export.js';
import { SHAIN_SHASHIN, SHAIN_SHASHIN_SJIS, archiverZip, buildZip, byPath, collect, deflated, deflatedZeros, stored } from './helpers.js';

const MB = 1024 * 1024;
const jpeg = (color: string): Promise<Buffer> => sharp({ create: { width: 32, height: 32, channels: 3, background: color } }).jpeg().toBuffer();

function zipFileOf(bytes: Buffer, name = 'test.zip'): string {
  const path = join(tempDir('wds-zip-'), name);
  writeFileSync(path, bytes);
  return path;
}

async function readZip(path: string, options = {}) {
  const source = await ZipSource.open(path, options);
  try {
    const got = await collect(source);
    const contents = new Map<string, Buffer>();
    for (const file of got.files) contents.set(file.relPath, await file.read(64 * MB));
    return { ...got, contents, label: source.label };
  } finally {
    await source.close();
  }
}

describe('ZipSource: an archiver zip', () => {
  it('yields the files with their paths, names and sizes, read and streamed on demand; directories, dotfiles and __MACOSX/ skipped', async () => {
    const red = await jpeg('#ff0000');
    const blue = await jpeg('#0000ff');
    const path = join(tempDir('wds-zip-'), 'photos.zip');
    await archiverZip(path, [
      { name: 'staff/', data: '' },
      { name: 'staff/A0001.jpg', data: red },
      { name: 'staff/nested/A0002.jpg', data: blue },
      { name: '__MACOSX/staff/._A0001.jpg', data: 'fork' },
      { name: 'staff/.DS_Store', data: 'x' },
      { name: 'Thumbs.db', data: 'x' },
      { name: 'manifest.jsonl', data: 'not an export' },
      { name: 'notes.txt', data: 'hello '.repeat(1000) },
    ]);
    const got = await readZip(path);
    expect(got.order).toEqual(['file:staff/A0001.jpg', 'file:staff/nested/A0002.jpg', 'file:notes.txt']);
    const file = byPath(got.files).get('staff/nested/A0002.jpg')!;
    expect(file).toMatchObject({ where: `${path}:staff/nested/A0002.jpg`, fileName: 'A0002.jpg', size: blue.length });
    expect(got.contents.get('staff/A0001.jpg')).toEqual(red);
    expect(got.contents.get('notes.txt')!.toString()).toBe('hello '.repeat(1000));
  });

  it('a second pass over the same source gives the same entries; files stay readable until close', async () => {
    const path = join(tempDir('wds-zip-'), 'photos.zip');
    await archiverZip(path, [{ name: 'A0001.jpg', data: 'one' }, { name: 'A0002.jpg', data: 'two' }]);
    const source = await ZipSource.open(path);
    const first = await collect(source);
    const second = await collect(source);
    expect(second.order).toEqual(first.order);
    expect((await first.files[1]!.read(10)).toString()).toBe('two');
    await source.close();
  });

  it('refuses a link made by archiver and reads the other entries', async () => {
    const path = join(tempDir('wds-zip-'), 'links.zip');
    await archiverZip(path, [{ name: 'A0001.jpg', data: 'a' }, { name: 'A0002.jpg', linkTo: '/etc/passwd' }, { name: 'A0003.jpg', data: 'c' }]);
    const got = await readZip(path);
    expect(got.order).toEqual(['file:A0001.jpg', 'refused:A0002.jpg', 'file:A0003.jpg']);
    expect(got.refused[0]).toEqual({ where: `${path}:A0002.jpg`, relPath: 'A0002.jpg', reason: 'is a link; links are not followed', fileName: 'A0002.jpg' });
  });

  it('read(maxBytes) rejects naming the entry and the limit, without inflating it', async () => {
    const path = join(tempDir('wds-zip-'), 'big.zip');
    // Random bytes: compressible data this large would be refused as a likely zip bomb.
    await archiverZip(path, [{ name: 'A0001.txt', data: randomBytes(5 * MB + 1) }]);
    const source = await ZipSource.open(path);
    const [file] = (await collect(source)).files;
    await expect(file!.read(5 * MB)).rejects.toThrow(`${path}:A0001.txt: 5242881 bytes, over the limit of 5242880 bytes`);
    expect((await file!.read(5 * MB + 1)).length).toBe(5 * MB + 1);
    await source.close();
  });
});

describe('ZipSource: entries escaping the root', () => {
  it('refuses `../evil.jpg`, `a/../../x`, absolute and drive paths, and backslashed ones, and reads the rest', async () => {
    const path = zipFileOf(buildZip([
      stored('A0001.jpg', 'good'),
      stored('../evil.jpg', 'evil'),
      stored('a/../../x.jpg', 'evil'),
      stored('/etc/x.jpg', 'evil'),
      stored('C:\\Windows\\x.jpg', 'evil'),
      stored('..\\..\\evil2.jpg', 'evil'),
      stored('a/../A0004.jpg', 'evil'),
      stored('dir\\sub\\A0002.jpg', 'win'),
      stored('./A0003.jpg', 'dot'),
    ]));
    const got = await readZip(path);
    expect(got.files.map((f) => f.relPath)).toEqual(['A0001.jpg', 'dir/sub/A0002.jpg', 'A0003.jpg']);
    expect(got.contents.get('dir/sub/A0002.jpg')!.toString()).toBe('win');
    expect(got.refused.map((r) => [r.relPath, r.reason])).toEqual([
      ['../evil.jpg', 'the path goes up with `..`; entries must stay inside the zip'],
      ['a/../../x.jpg', 'the path goes up with `..`; entries must stay inside the zip'],
      ['/etc/x.jpg', 'the path is absolute; entries must stay inside the zip'],
      ['C:/Windows/x.jpg', 'the path is absolute; entries must stay inside the zip'],
      ['../../evil2.jpg', 'the path goes up with `..`; entries must stay inside the zip'],
      ['a/../A0004.jpg', 'the path goes up with `..`; entries must stay inside the zip'],
    ]);
    expect(got.refused[0]!.where).toBe(`${path}:../evil.jpg`);
  });

  it('refuses `../evil.jpg` in a zip made by archiver (name patched in place, same length)', async () => {
    const path = join(tempDir('wds-zip-'), 'patched.zip');
    await archiverZip(path, [{ name: 'A0001.jpg', data: await jpeg('#00ff00') }, { name: 'xxxevil.jpg', data: 'evil' }]);
    const bytes = readFileSync(path);
    const from = Buffer.from('xxxevil.jpg');
    let at = bytes.indexOf(from);
    let patched = 0;
    for (; at !== -1; at = bytes.indexOf(from, at + 1), patched += 1) Buffer.from('../evil.jpg').copy(bytes, at);
    expect(patched).toBe(2); // the local header and the central directory
    writeFileSync(path, bytes);
    const got = await readZip(path);
    expect(got.order).toEqual(['file:A0001.jpg', 'refused:../evil.jpg']);
  });

  it('refuses a link built by hand (S_IFLNK in the external attributes)', async () => {
    const path = zipFileOf(buildZip([stored('A0001.jpg', '/etc/passwd', { mode: 0o120777 }), stored('A0002.jpg', 'ok', { mode: 0o100644 })]));
    const got = await readZip(path);
    expect(got.order).toEqual(['refused:A0001.jpg', 'file:A0002.jpg']);
    expect(got.refused[0]!.reason).toBe('is a link; links are not followed');
  });

  it('refuses names with control characters, encrypted entries and unknown compression methods', async () => {
    const path = zipFileOf(buildZip([
      stored('A\u0001.jpg', 'x'),
      deflated('A0001.jpg', Buffer.from('x'), { flags: 0x1 }),
      stored('A0002.jpg', 'x', { method: 12 as 0 }),
      stored('A0003.jpg', 'fine'),
    ]));
    const got = await readZip(path);
    expect(got.files.map((f) => f.relPath)).toEqual(['A0003.jpg']);
    expect(got.refused.map((r) => r.reason)).toEqual([
      'the name holds control characters',
      'is encrypted; encrypted entries cannot be read',
      'uses compression method 12; only stored and deflated entries can be read',
    ]);
  });
});

describe('ZipSource: names', () => {
  const sjisName = Buffer.concat([SHAIN_SHASHIN_SJIS, Buffer.from('/A0001.jpg')]);

  it('the hand-made Shift_JIS bytes are what TextDecoder reads as 社員写真', () => {
    expect(new TextDecoder('shift_jis', { fatal: true }).decode(SHAIN_SHASHIN_SJIS)).toBe(SHAIN_SHASHIN);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(SHAIN_SHASHIN_SJIS)).toThrow();
  });

  it('decodes a Shift_JIS name (a zip made on Japanese Windows, no UTF-8 flag)', async () => {
    const got = await readZip(zipFileOf(buildZip([stored(sjisName, 'photo')])));
    expect(got.files.map((f) => [f.relPath, f.fileName])).toEqual([[`${SHAIN_SHASHIN}/A0001.jpg`, 'A0001.jpg']]);
    expect(got.contents.get(`${SHAIN_SHASHIN}/A0001.jpg`)!.toString()).toBe('photo');
  });

  it('decodes UTF-8 names with and without the UTF-8 flag; a flagged name that is not UTF-8 is refused', async () => {
    const got = await readZip(zipFileOf(buildZip([
      stored(`${SHAIN_SHASHIN}/A0001.jpg`, 'a', { flags: 0x800 }),
      stored(`${SHAIN_SHASHIN}/A0002.jpg`, 'b'),
      stored(sjisName, 'c', { flags: 0x800 }),
    ])));
    expect(got.files.map((f) => f.relPath)).toEqual([`${SHAIN_SHASHIN}/A0001.jpg`, `${SHAIN_SHASHIN}/A0002.jpg`]);
    expect(got.refused.map((r) => r.reason)).toEqual(['the name is flagged UTF-8 but its bytes are not valid UTF-8']);
  });

  it('refuses a name that is neither UTF-8 nor Shift_JIS, and reads the rest', async () => {
    const path = zipFileOf(buildZip([stored(Buffer.from([0x41, 0xff, 0xfd, 0x2e, 0x6a, 0x70, 0x67]), 'x'), stored('A0001.jpg', 'ok')]));
    const got = await readZip(path);
    expect(got.files.map((f) => f.relPath)).toEqual(['A0001.jpg']);
    expect(got.refused).toHaveLength(1);
    expect(got.refused[0]!.reason).toBe(NOT_UTF8_NOR_SJIS);
    expect(got.refused[0]!.relPath).toBe('A\ufffd\ufffd.jpg');
  });

  it('a damaged list of entries is a fatal error naming the zip and where the list breaks', async () => {
    const zip = buildZip([stored('A0001.jpg', 'a'), stored('A0002.jpg', 'b')]);
    // The second central directory header loses its signature.
    const first = zip.indexOf(Buffer.from('PK\x01\x02', 'latin1'));
    zip.writeUInt32LE(0, zip.indexOf(Buffer.from('PK\x01\x02', 'latin1'), first + 4));
    const path = zipFileOf(zip);
    await expect(readZip(path)).rejects.toThrow(`${path}: not a readable zip: its list of entries is damaged after 1 of the 2 it declares (invalid central directory file header signature: 0x0)`);
  });

  it('refuses a name of another code page that happens to read as Shift_JIS punctuation, rather than renaming the file', async () => {
    // CP437 (a zip made by an older Windows in a Western language): Müller.pdf and Señor.pdf.
    const muller = Buffer.from([0x4d, 0x81, 0x6c, 0x6c, 0x65, 0x72, 0x2e, 0x70, 0x64, 0x66]);
    const senor = Buffer.from([0x53, 0x65, 0xa4, 0x6f, 0x72, 0x2e, 0x70, 0x64, 0x66]);
    // Half-width katakana, as an old Japanese system writes them: read.
    const katakana = Buffer.from([0xb6, 0xc0, 0xb6, 0xc5, 0x2e, 0x70, 0x64, 0x66]);
    const got = await readZip(zipFileOf(buildZip([stored(muller, 'm'), stored(senor, 's'), stored(katakana, 'k')])));
    expect(got.files.map((f) => f.relPath)).toEqual(['ｶﾀｶﾅ.pdf']);
    expect(got.refused.map((r) => r.reason)).toEqual([NOT_UTF8_NOR_SJIS, NOT_UTF8_NOR_SJIS]);
  });

  it('takes the Info-ZIP Unicode Path field when its CRC matches the name, and ignores it when not', async () => {
    const unicode = (forName: Buffer, utf8Name: string): Buffer => {
      const data = Buffer.concat([Buffer.from([1]), Buffer.alloc(4), Buffer.from(utf8Name)]);
      data.writeUInt32LE(crc32(forName), 1);
      const header = Buffer.alloc(4);
      header.writeUInt16LE(0x7075, 0);
      header.writeUInt16LE(data.length, 2);
      return Buffer.concat([header, data]);
    };
    const legacy = Buffer.from('????/A0001.jpg');
    const got = await readZip(zipFileOf(buildZip([
      stored(legacy, 'a', { extra: unicode(legacy, `${SHAIN_SHASHIN}/A0001.jpg`) }),
      stored('B0001.jpg', 'b', { extra: unicode(Buffer.from('other'), 'Z.jpg') }),
    ])));
    expect(got.files.map((f) => f.relPath)).toEqual([`${SHAIN_SHASHIN}/A0001.jpg`, 'B0001.jpg']);
  });
});

describe('ZipSource: zip bombs', () => {
  it('refuses 200 MB of zeros deflated (over the 64 MB cap) without inflating it, and reads the rest', async () => {
    const zeros = await deflatedZeros(200 * MB);
    expect(zeros.data.length).toBeLessThan(MB);
    const path = zipFileOf(buildZip([stored('A0001.jpg', 'ok'), { name: 'bomb.jpg', data: zeros.data, method: 8, size: 200 * MB, crc: zeros.crc }]));
    const got = await readZip(path);
    expect(got.files.map((f) => f.relPath)).toEqual(['A0001.jpg']);
    expect(got.refused).toEqual([{ where: `${path}:bomb.jpg`, relPath: 'bomb.jpg', reason: `declares ${200 * MB} bytes uncompressed, over the limit of ${64 * MB} bytes; not inflated`, fileName: 'bomb.jpg' }]);
  });

  it('refuses an entry under the cap compressed more than 100:1 beyond 1 MB; one under 1 MB or under 100:1 is read', async () => {
    const tenMbZeros = await deflatedZeros(10 * MB);
    const halfMbZeros = Buffer.alloc(MB / 2);
    // 2 MB whose compression stays under 100:1: a byte of noise every 64 bytes.
    const mild = Buffer.alloc(2 * MB);
    for (let i = 0; i < mild.length; i += 64) mild[i] = (i * 2654435761) >>> 24;
    const path = zipFileOf(buildZip([
      { name: 'ratio.pdf', data: tenMbZeros.data, method: 8, size: 10 * MB, crc: tenMbZeros.crc },
      deflated('small.pdf', halfMbZeros),
      deflated('mild.pdf', mild),
    ]));
    expect(deflateRawSync(mild).length * 100).toBeGreaterThan(mild.length);
    const got = await readZip(path);
    expect(got.files.map((f) => f.relPath)).toEqual(['small.pdf', 'mild.pdf']);
    expect(got.contents.get('mild.pdf')!.equals(mild)).toBe(true);
    expect(got.refused).toHaveLength(1);
    expect(got.refused[0]!.reason).toMatch(/^compressed \d+:1 \(\d+ bytes to 10485760\), over 100:1 beyond 1 MB: a likely zip bomb; not inflated$/);
  });

  it('the cap is a parameter', async () => {
    const path = zipFileOf(buildZip([stored('A0001.jpg', Buffer.alloc(2000)), stored('A0002.jpg', Buffer.alloc(1000))]));
    const got = await readZip(path, { maxEntryBytes: 1500 });
    expect(got.files.map((f) => f.relPath)).toEqual(['A0002.jpg']);
    expect(got.refused[0]!.reason).toBe('declares 2000 bytes uncompressed, over the limit of 1500 bytes; not inflated');
  });

  it('an entry that inflates past its declared size is stopped where the declared size ends', async () => {
    const real = Buffer.alloc(8 * MB, 0x20);
    // Declares 1,000 bytes; the ratio check cannot see it (under 1 MB), so reading must stop it.
    const path = zipFileOf(buildZip([{ ...deflated('liar.txt', real), size: 1000 }, stored('A0001.jpg', 'ok')]));
    const source = await ZipSource.open(path);
    const got = await collect(source);
    const liar = got.files.find((f) => f.relPath === 'liar.txt')!;
    expect(liar.size).toBe(1000);
    await expect(liar.read(5 * MB)).rejects.toThrow(`${path}:liar.txt: size differs from the size the zip declares (more than the 1000 bytes declared)`);
    let streamed = 0;
    await expect((async () => {
      for await (const chunk of await liar.open()) streamed += (chunk as Buffer).length;
    })()).rejects.toThrow('size differs from the size the zip declares');
    expect(streamed).toBeLessThanOrEqual(1000);
    await source.close();
  });
});

describe('ZipSource: unreadable zips', () => {
  it('a truncated zip is a fatal error naming the file', async () => {
    const whole = buildZip([stored('A0001.jpg', Buffer.alloc(10_000, 1)), stored('A0002.jpg', Buffer.alloc(10_000, 2))]);
    const path = zipFileOf(whole.subarray(0, Math.floor(whole.length / 2)), 'cut.zip');
    await expect(ZipSource.open(path)).rejects.toThrow(`${path}: not a readable zip`);
  });

  it('an entry whose data runs past the end of the file fails to read, naming the zip and the entry', async () => {
    // The directory is intact and says 1,000,000 bytes; the file holds 10,000 of them.
    const path = zipFileOf(buildZip([stored('A0001.jpg', Buffer.alloc(10_000, 1), { size: 1_000_000, compressedSize: 1_000_000 })]), 'hollow.zip');
    const source = await ZipSource.open(path);
    const [file] = (await collect(source)).files;
    await expect(file!.read(5 * MB)).rejects.toThrow(`${path}:A0001.jpg: `);
    await expect(file!.read(5 * MB)).rejects.toThrow('overflows');
    await source.close();
  });

  it('a file that is not a zip is a fatal error naming it', async () => {
    const path = zipFileOf(Buffer.from('this is not a zip at all, just text'), 'fake.zip');
    await expect(ZipSource.open(path)).rejects.toThrow(`${path}: not a readable zip`);
  });
});
