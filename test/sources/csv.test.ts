/**
 * A CSV manifest as an import source (DESIGN.md section 5): `code,path[,file_name]`, an optional
 * header, paths relative to the CSV's folder, UTF-8 with or without BOM or Shift_JIS, RFC 4180
 * quoting; bad lines refused naming their line number while the others go on.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CsvSource, parseCsv } from '../../src/sources/csv.js';
import { tempDir } from '../helpers/export.js';
import { SHAIN_SHASHIN, SHAIN_SHASHIN_SJIS, collect } from './helpers.js';

/** A folder with the given files and a CSV of the given bytes; returns the CSV's path. */
function csvWith(csv: string | Buffer, files: Record<string, string> = {}, csvName = 'list.csv'): string {
  const dir = tempDir('wds-csv-');
  for (const [path, data] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), data);
  }
  const csvPath = join(dir, csvName);
  mkdirSync(join(csvPath, '..'), { recursive: true });
  writeFileSync(csvPath, csv);
  return csvPath;
}

async function read(csvPath: string) {
  return collect(await CsvSource.open(csvPath));
}

describe('parseCsv', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks, and counts lines from where each record starts', () => {
    const records = parseCsv('a,"b,c","say ""hi"""\r\n"multi\nline",x\n\nlast,"unclosed');
    expect(records).toEqual([
      { line: 1, fields: ['a', 'b,c', 'say "hi"'], unclosed: false },
      { line: 2, fields: ['multi\nline', 'x'], unclosed: false },
      { line: 4, fields: [''], unclosed: false },
      { line: 5, fields: ['last', 'unclosed'], unclosed: true },
    ]);
  });
});

describe('CsvSource', () => {
  it('takes code,path lines relative to the CSV folder, with or without a header; the code comes from the CSV', async () => {
    for (const header of ['code,path\n', 'Code,Path,File_Name\n', '']) {
      const csvPath = csvWith(`${header}A0001,photos/one.jpg\nA0002,two.jpg\n`, { 'photos/one.jpg': 'one', 'two.jpg': 'two' });
      const got = await read(csvPath);
      expect(got.refused).toEqual([]);
      expect(got.files.map((f) => [f.code, f.relPath, f.fileName, f.size])).toEqual([['A0001', 'photos/one.jpg', 'one.jpg', 3], ['A0002', 'two.jpg', 'two.jpg', 3]]);
      expect((await got.files[0]!.read(10)).toString()).toBe('one');
      expect(got.files[0]!.where).toBe(join(csvPath, '..', 'photos/one.jpg'));
    }
  });

  it('paths are relative to the CSV, not to the working folder', async () => {
    const csvPath = csvWith('A0001,one.jpg\n', { 'sub/one.jpg': 'deep', 'one.jpg': 'top' }, 'sub/list.csv');
    const got = await read(csvPath);
    expect((await got.files[0]!.read(10)).toString()).toBe('deep');
  });

  it('a header is only a first row whose first cell is `code`', async () => {
    const got = await read(csvWith('codes,one.jpg\nA0002,one.jpg\n', { 'one.jpg': 'x' }));
    expect(got.files.map((f) => f.code)).toEqual(['codes', 'A0002']);
  });

  it('file_name overrides the name sent to the service; quoted fields hold commas and doubled quotes', async () => {
    const csvPath = csvWith('code,path,file_name\r\nA0001,"docs/a,b.pdf","Contract, ""final"".pdf"\r\nA0002,docs/c.pdf,\r\n', { 'docs/a,b.pdf': 'ab', 'docs/c.pdf': 'c' });
    const got = await read(csvPath);
    expect(got.files.map((f) => [f.code, f.relPath, f.fileName])).toEqual([['A0001', 'docs/a,b.pdf', 'Contract, "final".pdf'], ['A0002', 'docs/c.pdf', 'c.pdf']]);
  });

  it('reads UTF-8 with a BOM (the header still found), and Windows backslash paths', async () => {
    const csv = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`code,path\nA0001,${SHAIN_SHASHIN}\\A0001.jpg\n`)]);
    const got = await read(csvWith(csv, { [`${SHAIN_SHASHIN}/A0001.jpg`]: 'x' }));
    expect(got.refused).toEqual([]);
    expect(got.files.map((f) => [f.code, f.relPath])).toEqual([['A0001', `${SHAIN_SHASHIN}/A0001.jpg`]]);
  });

  it('reads a Shift_JIS CSV (Excel on Japanese Windows)', async () => {
    const csv = Buffer.concat([Buffer.from('code,path\r\nA0001,'), SHAIN_SHASHIN_SJIS, Buffer.from('/A0001.jpg,'), SHAIN_SHASHIN_SJIS, Buffer.from('.jpg\r\n')]);
    const got = await read(csvWith(csv, { [`${SHAIN_SHASHIN}/A0001.jpg`]: 'x' }));
    expect(got.refused).toEqual([]);
    expect(got.files.map((f) => [f.relPath, f.fileName])).toEqual([[`${SHAIN_SHASHIN}/A0001.jpg`, `${SHAIN_SHASHIN}.jpg`]]);
  });

  it('a CSV that is neither UTF-8 nor Shift_JIS is a fatal error naming it', async () => {
    const csvPath = csvWith(Buffer.from([0x41, 0x2c, 0xff, 0xfe, 0x0a]));
    await expect(CsvSource.open(csvPath)).rejects.toThrow(`${csvPath}: the CSV is neither UTF-8 nor Shift_JIS text`);
    const missing = join(tempDir('wds-csv-'), 'none.csv');
    await expect(CsvSource.open(missing)).rejects.toThrow(`${missing}: ENOENT`);
  });

  it('refuses, naming the line, a missing file, an empty code, an empty path, a path leaving the folder, a folder, a link, too many columns and an unclosed quote; takes the rest', async () => {
    const outside = tempDir('wds-csv-outside-');
    writeFileSync(join(outside, 'secret.jpg'), 'secret');
    const csvPath = csvWith([
      'code,path', // 1
      'A0001,ok.jpg', // 2
      'A0002,missing.jpg', // 3
      ',ok.jpg', // 4
      'A0003,', // 5
      'A0004,../secret.jpg', // 6
      `A0005,${join(outside, 'secret.jpg')}`, // 7
      'A0006,sub', // 8
      'A0007,link.jpg', // 9
      'A0008,a,b,c.jpg', // 10
      '', // 11: blank, skipped
      'A0009,sub/../ok.jpg', // 12: stays inside, taken
      'A0010,C:\\photos\\x.jpg', // 13
      'A0011,"ok.jpg', // 14
    ].join('\n'), { 'ok.jpg': 'ok', 'sub/x': 'x' });
    symlinkSync(join(outside, 'secret.jpg'), join(csvPath, '..', 'link.jpg'));
    const got = await read(csvPath);
    expect(got.files.map((f) => [f.code, f.relPath])).toEqual([['A0001', 'ok.jpg'], ['A0009', 'ok.jpg']]);
    expect(got.refused.map((r) => [r.where, r.reason])).toEqual([
      [`${csvPath}:3`, "line 3: no file at missing.jpg (paths are relative to the CSV's folder)"],
      [`${csvPath}:4`, 'line 4: the code is empty'],
      [`${csvPath}:5`, 'line 5: the path is empty'],
      [`${csvPath}:6`, "line 6: the path ../secret.jpg leaves the CSV's folder"],
      [`${csvPath}:7`, `line 7: the path ${join(outside, 'secret.jpg')} leaves the CSV's folder`],
      [`${csvPath}:8`, 'line 8: sub is a folder, not a file'],
      [`${csvPath}:9`, 'line 9: link.jpg is a link; links are not followed'],
      [`${csvPath}:10`, 'line 10: 4 columns; expected code,path[,file_name] (quote a field that holds a comma)'],
      [`${csvPath}:13`, "line 13: the path C:\\photos\\x.jpg is a Windows absolute path; give it relative to the CSV's folder"],
      [`${csvPath}:14`, 'line 14: a quoted field is not closed before the end of the file'],
    ]);
    // A refused line's member is the code it gives, for the report.
    expect(got.refused.map((r) => r.code)).toEqual(['A0002', undefined, 'A0003', 'A0004', 'A0005', 'A0006', 'A0007', 'A0008', 'A0010', 'A0011']);
  });

  it('reads a CSV Excel saved with semicolons or tabs, and a header that names its columns in another order', async () => {
    const files = { 'a.jpg': 'a', 'b;c.jpg': 'b', 'd.jpg': 'd' };
    const semicolons = await read(csvWith('code;path;file_name\r\nA0001;a.jpg;Anna.jpg\r\nA0002;"b;c.jpg"\r\n', files));
    expect(semicolons.files.map((f) => [f.code, f.relPath, f.fileName])).toEqual([['A0001', 'a.jpg', 'Anna.jpg'], ['A0002', 'b;c.jpg', 'b;c.jpg']]);
    const tabs = await read(csvWith('A0001\ta.jpg\nA0003\td.jpg\n', files));
    expect(tabs.files.map((f) => [f.code, f.relPath])).toEqual([['A0001', 'a.jpg'], ['A0003', 'd.jpg']]);
    const reversed = await read(csvWith('path,code\na.jpg,A0001\nd.jpg,A0003,Dora.jpg\n', files));
    expect(reversed.files.map((f) => [f.code, f.relPath, f.fileName])).toEqual([['A0001', 'a.jpg', 'a.jpg'], ['A0003', 'd.jpg', 'Dora.jpg']]);
    expect([semicolons.refused, tabs.refused, reversed.refused]).toEqual([[], [], []]);
    // A comma on the first line keeps commas: a semicolon is then part of a path.
    const commas = await read(csvWith('A0002,b;c.jpg\nA0001;a.jpg\n', files));
    expect(commas.files.map((f) => f.relPath)).toEqual(['b;c.jpg']);
    expect(commas.refused.map((r) => r.reason)).toEqual(['line 2: the path is empty']);
  });

  it('refuses a file_name holding / or \\, which the service would refuse after an update request', async () => {
    const got = await read(csvWith('A0001,a.pdf,2024/contract.pdf\nA0002,b.pdf,ok.pdf\n', { 'a.pdf': 'a', 'b.pdf': 'b' }));
    expect(got.files.map((f) => f.fileName)).toEqual(['ok.pdf']);
    expect(got.refused.map((r) => r.reason)).toEqual(['line 1: the file_name 2024/contract.pdf holds / or \\, which a file name sent to the service may not']);
  });

  it('refuses a path through a linked folder that leads outside the CSV folder', async () => {
    const outside = tempDir('wds-csv-outside-');
    writeFileSync(join(outside, 'secret.jpg'), 'secret');
    const csvPath = csvWith('A0001,linked/secret.jpg\n');
    symlinkSync(outside, join(csvPath, '..', 'linked'));
    const got = await read(csvPath);
    expect(got.files).toEqual([]);
    expect(got.refused.map((r) => r.reason)).toEqual(["line 1: the path linked/secret.jpg leaves the CSV's folder through a linked folder"]);
  });

  it('an absolute path inside the CSV folder is taken; trailing empty cells are ignored', async () => {
    const csvPath = csvWith('', { 'a.jpg': 'a' });
    writeFileSync(csvPath, `A0001,${join(csvPath, '..', 'a.jpg')},,\n`);
    const got = await read(csvPath);
    expect(got.refused).toEqual([]);
    expect(got.files.map((f) => [f.relPath, f.fileName])).toEqual([['a.jpg', 'a.jpg']]);
  });
});
