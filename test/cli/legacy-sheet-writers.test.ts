/**
 * The sheet download's writers: CSV as Excel and RFC 4180 read it (BOM, CRLF, quoting), JSONL one
 * record per line, and the atomic replace of the output file (a stop or a failure leaves what was
 * there and no partial file).
 */
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseCsv } from '../../src/sources/csv.js';
import { formatOf, sheetText, type SheetRecord } from '../../src/sinks/sheet-formats.js';
import { partialFileOf, writeFileAtomically } from '../../src/sinks/atomic-file.js';
import { looksLikeSheetDownload } from '../../src/sinks/earlier-sheet.js';

const text = (pieces: Iterable<string>): string => [...pieces].join('');

describe('CSV', () => {
  it('begins with a BOM, labels the columns with the headers, ends lines with CRLF and quotes what needs it', () => {
    const headers = { member_code: '社員番号', member_name: '氏名', definition_7: 'Note' };
    const records = [
      { member_code: 'A001', member_name: '山田 太郎', definition_7: 'plain' },
      { member_code: 'A002', member_name: 'Smith, John', definition_7: 'said "hi"\nthen left' },
    ];
    expect(text(sheetText('csv', headers, records))).toBe(
      '\uFEFF社員番号,氏名,Note\r\n' +
      'A001,山田 太郎,plain\r\n' +
      'A002,"Smith, John","said ""hi""\nthen left"\r\n',
    );
  });

  it('reads back through an RFC 4180 parser to the same values, whatever they hold', () => {
    const awkward = ['a,b', '"quoted"', 'line\r\nbreak', 'cr\ronly', ' leading', 'trailing ', '', '=1+1', '😀 絵文字', '""', ','];
    const headers = Object.fromEntries(awkward.map((_, i) => [`definition_${i}`, `label ${i}, "${i}"`]));
    const records: SheetRecord[] = [Object.fromEntries(awkward.map((v, i) => [`definition_${i}`, v])), Object.fromEntries(awkward.map((v, i) => [`definition_${i}`, v.split('').reverse().join('')]))];
    const csv = text(sheetText('csv', headers, records));
    expect(csv.startsWith('\uFEFF')).toBe(true);
    const rows = parseCsv(csv.slice(1));
    expect(rows.map((r) => r.fields)).toEqual([Object.values(headers), ...records.map((r) => Object.values(r))]);
    expect(rows.every((r) => !r.unclosed)).toBe(true);
  });

  it('keeps fields the headers do not name as extra columns, and writes no value as an empty cell', () => {
    const headers = { member_code: 'Code', definition_1: 'Grade' };
    const records = [
      { member_code: 'A001', definition_1: 3, last_modified_at: '2026/04/01 10:00:00' },
      { member_code: 'A002', definition_1: null, tags: ['x', 'y'], active: true },
      { member_code: 'A003' },
    ];
    const rows = parseCsv(text(sheetText('csv', headers, records)).slice(1)).map((r) => r.fields);
    expect(rows).toEqual([
      ['Code', 'Grade', 'last_modified_at', 'tags', 'active'],
      ['A001', '3', '2026/04/01 10:00:00', '', ''],
      ['A002', '', '', '["x","y"]', 'true'],
      ['A003', '', '', '', ''],
    ]);
  });

  it('a sheet of many members comes in several pieces that make the same rows', () => {
    const records = Array.from({ length: 5000 }, (_, i) => ({ member_code: `M${i}`, definition_1: `value, ${i}\nsecond line` }));
    const pieces = [...sheetText('csv', { member_code: 'Code', definition_1: 'Text' }, records)];
    expect(pieces.length).toBeGreaterThan(1);
    const rows = parseCsv(pieces.join('').slice(1));
    expect(rows).toHaveLength(5001);
    expect(rows[4321]!.fields).toEqual(['M4320', 'value, 4320\nsecond line']);
  });
});

describe('JSONL', () => {
  it('writes one record per line, as the service sent it, line breaks inside values escaped', () => {
    const records = [{ member_code: 'A001', definition_3: 'two\nlines', n: 1 }, { member_code: 'A002', definition_3: null }];
    const out = text(sheetText('jsonl', { member_code: 'Code' }, records));
    expect(out.endsWith('\n')).toBe(true);
    const lines = out.split('\n').slice(0, -1);
    expect(lines).toHaveLength(2);
    expect(lines.map((l) => JSON.parse(l))).toEqual(records);
  });
});

describe('output names', () => {
  it('takes the format from the extension, in any case, and nothing else', () => {
    expect(formatOf('out/sheet.csv')).toBe('csv');
    expect(formatOf('SHEET.JSONL')).toBe('jsonl');
    expect(formatOf('sheet.json')).toBeNull();
    expect(formatOf('sheet.csv.gz')).toBeNull();
    expect(formatOf('csv')).toBeNull();
  });
});

describe('atomic replace', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wds-legacy-writer-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('replaces the file whole and leaves no partial file', async () => {
    const target = join(dir, 'sheet.csv');
    await writeFile(target, 'old');
    const bytes = await writeFileAtomically(target, ['new ', 'text 日本']);
    expect(await readFile(target, 'utf8')).toBe('new text 日本');
    expect(bytes).toBe(Buffer.byteLength('new text 日本'));
    expect(await readdir(dir)).toEqual(['sheet.csv']);
  });

  it('a stop part way leaves the earlier file as it was and no partial file', async () => {
    const target = join(dir, 'sheet.csv');
    await writeFile(target, 'earlier download');
    const stop = new AbortController();
    function* pieces(): Generator<string> {
      yield 'first piece';
      stop.abort('SIGINT');
      yield 'second piece';
    }
    await expect(writeFileAtomically(target, pieces(), { signal: stop.signal })).rejects.toBe('SIGINT');
    expect(await readFile(target, 'utf8')).toBe('earlier download');
    expect(await readdir(dir)).toEqual(['sheet.csv']);
  });

  it('a failure while writing leaves no file where there was none', async () => {
    const target = join(dir, 'sheet.jsonl');
    function* pieces(): Generator<string> {
      yield '{"a":1}\n';
      throw new Error('the records ran out');
    }
    await expect(writeFileAtomically(target, pieces())).rejects.toThrow('the records ran out');
    expect(await readdir(dir)).toEqual([]);
  });

  it('a partial file left by a killed run is simply written over', async () => {
    const target = join(dir, 'sheet.csv');
    await writeFile(partialFileOf(target), 'left by a killed run, longer than what comes next');
    await writeFileAtomically(target, ['short']);
    expect(await readFile(target, 'utf8')).toBe('short');
    expect(await readdir(dir)).toEqual(['sheet.csv']);
  });
});

describe('an earlier download at --out', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wds-legacy-earlier-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is a CSV with a BOM, a JSONL of objects, or empty; anything else is not', async () => {
    const file = (name: string, body: string): Promise<string> => writeFile(join(dir, name), body).then(() => join(dir, name));
    expect(await looksLikeSheetDownload(await file('a.csv', text(sheetText('csv', { a: 'A' }, [{ a: 1 }]))), 'csv')).toBe(true);
    expect(await looksLikeSheetDownload(await file('b.csv', 'code,name\r\nA001,x\r\n'), 'csv')).toBe(false);
    expect(await looksLikeSheetDownload(await file('c.csv', ''), 'csv')).toBe(true);
    expect(await looksLikeSheetDownload(await file('d.jsonl', '{"member_code":"A001"}\n'), 'jsonl')).toBe(true);
    expect(await looksLikeSheetDownload(await file('e.jsonl', 'notes about the sheet\n'), 'jsonl')).toBe(false);
    expect(await looksLikeSheetDownload(await file('f.jsonl', '[1,2]\n'), 'jsonl')).toBe(false);
  });
});
