/**
 * A CSV manifest as an import source (DESIGN.md section 5): `code,path[,file_name]`, one file per
 * line, paths relative to the CSV's folder, an optional header row (its first cell is `code`, or
 * its cells name the columns in another order); separated by commas, or by semicolons or tabs
 * when the first line has no comma.
 * UTF-8 with or without a BOM, or Shift_JIS (Excel on Japanese Windows saves CSVs so); RFC 4180
 * quoting (commas, doubled quotes and line breaks inside quotes). A line that cannot be taken (an
 * empty code, a path leaving the CSV's folder, no such file, a link) is refused naming its line
 * number, and the others go on; `file_name` overrides the name sent to the service.
 */
import type { Stats } from 'node:fs';
import { lstat, readFile, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { TextDecoder } from 'node:util';
import type { ImportSource, SourceEntry, SourceFile } from './source.js';
import { errorAbout } from './file-rules.js';
import { LINK_REFUSED, diskFile } from './folder.js';

export interface CsvRecord {
  /** The line the record starts on, from 1. */
  line: number;
  fields: string[];
  /** A quoted field ran to the end of the text. */
  unclosed: boolean;
}

/** RFC 4180 records; a quote opens a quoted field only at the start of a field, elsewhere it is text. */
export function parseCsv(text: string, delimiter = ','): CsvRecord[] {
  return [...csvRecords(text, delimiter)];
}

/** {@link parseCsv}'s records one at a time, so that a long CSV is not held twice, as text and as records. */
export function* csvRecords(text: string, delimiter = ','): Generator<CsvRecord> {
  let i = 0;
  let line = 1;
  while (i < text.length) {
    const record: CsvRecord = { line, fields: [], unclosed: false };
    let field = '';
    let quoted = false;
    let atFieldStart = true;
    for (;;) {
      const c = text[i];
      if (c === undefined) {
        record.unclosed = quoted;
        record.fields.push(field);
        break;
      }
      if (quoted) {
        if (c === '"' && text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        if (c === '"') quoted = false;
        else field += c;
        if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) line += 1;
        i += 1;
        continue;
      }
      if (c === '"' && atFieldStart) {
        quoted = true;
        atFieldStart = false;
        i += 1;
        continue;
      }
      if (c === delimiter) {
        record.fields.push(field);
        field = '';
        atFieldStart = true;
        i += 1;
        continue;
      }
      if (c === '\r' || c === '\n') {
        record.fields.push(field);
        i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
        line += 1;
        break;
      }
      field += c;
      atFieldStart = false;
      i += 1;
    }
    yield record;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const shiftJis = new TextDecoder('shift_jis', { fatal: true });

/** UTF-8 (a BOM dropped), else Shift_JIS, else a fatal error naming the CSV. */
export function decodeCsv(bytes: Buffer, where: string): string {
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  try {
    return utf8.decode(bom ? bytes.subarray(3) : bytes).replace(/^\uFEFF/, '');
  } catch {
    if (bom) throw new Error(`${where}: starts with a UTF-8 BOM but is not valid UTF-8`);
  }
  try {
    return shiftJis.decode(bytes);
  } catch {
    throw new Error(`${where}: the CSV is neither UTF-8 nor Shift_JIS text`);
  }
}

const isBlank = (record: CsvRecord): boolean => record.fields.every((f) => f.trim() === '');

/**
 * The separator of the first line that holds one: a comma, else a semicolon or a tab (Excel saves
 * "CSV" with semicolons where the decimal mark is a comma). A line with no comma cannot be a valid
 * `code,path` line, so reading it by its semicolons takes nothing a comma would have taken.
 */
export function delimiterOf(text: string): string {
  const first = text.split(/\r?\n/).find((line) => line.trim() !== '') ?? '';
  if (first.includes(',')) return ',';
  if (first.includes(';')) return ';';
  return first.includes('\t') ? '\t' : ',';
}

/** Where each column is: by the header's names, in any order, else code, path, file_name. */
interface Columns {
  code: number;
  path: number;
  fileName: number;
}

const IN_ORDER: Columns = { code: 0, path: 1, fileName: 2 };

/** The header's columns, or null when the first record is not a header (its cells are not column names). */
function headerColumns(record: CsvRecord): Columns | null {
  const names = record.fields.map((f) => f.trim().toLowerCase());
  if (names.length <= 3 && names.includes('code') && names.includes('path') && names.every((n) => n === 'code' || n === 'path' || n === 'file_name')) {
    const code = names.indexOf('code');
    const path = names.indexOf('path');
    // A third column the header does not name is the file_name, as without a header.
    const fileName = names.includes('file_name') ? names.indexOf('file_name') : [0, 1, 2].find((i) => i !== code && i !== path)!;
    return { code, path, fileName };
  }
  return names[0] === 'code' ? IN_ORDER : null;
}

/** A path's entry (not followed), and its real path relative to the CSV's folder's (null when either cannot be resolved). */
type DiskFacts = { info: Stats; real: string | null } | { error: NodeJS.ErrnoException };

async function diskFacts(dir: string, full: string): Promise<DiskFacts> {
  let info: Stats;
  try {
    info = await lstat(full);
  } catch (error) {
    return { error: error as NodeJS.ErrnoException };
  }
  if (!info.isFile()) return { info, real: null };
  // A linked folder on the way could lead outside: the real path must stay inside too.
  const real = await Promise.all([realpath(dir), realpath(full)]).then(([d, f]) => relative(d, f), () => null);
  return { info, real };
}

export class CsvSource implements ImportSource {
  private constructor(
    /** The CSV as the user named it. */
    readonly label: string,
    private readonly text: string,
    private readonly columns: Columns,
    private readonly delimiter: string,
    /** The first record names the columns. */
    private readonly header: boolean,
  ) {}

  /** Reads and parses the CSV; one that cannot be read or decoded is a fatal error naming it. */
  static async open(csvPath: string): Promise<CsvSource> {
    let bytes: Buffer;
    try {
      bytes = await readFile(csvPath);
    } catch (error) {
      throw errorAbout(csvPath, error);
    }
    const text = decodeCsv(bytes, csvPath);
    const delimiter = delimiterOf(text);
    const first = CsvSource.records(text, delimiter).next();
    const header = first.done ? null : headerColumns(first.value);
    return new CsvSource(csvPath, text, header ?? IN_ORDER, delimiter, header !== null);
  }

  /** The records that are not blank, read as they are needed. */
  private static *records(text: string, delimiter: string): Generator<CsvRecord> {
    for (const record of csvRecords(text, delimiter)) if (!isBlank(record)) yield record;
  }

  async *entries(): AsyncGenerator<SourceEntry> {
    const dir = dirname(this.label);
    // What the disk says of each path, looked at once however many lines name it.
    const looked = new Map<string, Promise<DiskFacts>>();
    const lookAt = (full: string): Promise<DiskFacts> => {
      let facts = looked.get(full);
      if (!facts) looked.set(full, (facts = diskFacts(dir, full)));
      return facts;
    };
    let skip = this.header;
    for (const record of CsvSource.records(this.text, this.delimiter)) {
      if (skip) {
        skip = false;
        continue;
      }
      const taken = await this.take(record, dir, lookAt);
      if ('reason' in taken) {
        yield { kind: 'refused', refused: { where: `${this.label}:${record.line}`, relPath: taken.relPath, reason: `line ${record.line}: ${taken.reason}`, code: taken.code } };
      } else {
        yield { kind: 'file', file: taken };
      }
    }
  }

  /** One line: the file it names, or why it is refused. */
  private async take(record: CsvRecord, dir: string, lookAt: (full: string) => Promise<DiskFacts>): Promise<SourceFile | { relPath: string; reason: string; code?: string }> {
    const fields = record.fields.map((f) => f.trim());
    // Excel writes trailing empty cells as trailing commas.
    while (fields.length > 3 && fields.at(-1) === '') fields.pop();
    const { code: codeAt, path: pathAt, fileName: nameAt } = this.columns;
    const code = fields[codeAt] ?? '';
    const written = fields[pathAt] ?? '';
    const overrideName = fields[nameAt] ?? '';
    const refuse = (reason: string) => ({ relPath: written, reason, code: code || undefined });
    if (record.unclosed) return refuse('a quoted field is not closed before the end of the file');
    if (fields.length > 3) {
      const d = this.delimiter === '\t' ? 'tab' : this.delimiter;
      return refuse(`${fields.length} columns; expected code${d}path[${d}file_name] (quote a field that holds a ${this.delimiter === ',' ? 'comma' : this.delimiter === ';' ? 'semicolon' : 'tab'})`);
    }
    if (code === '') return refuse('the code is empty');
    if (written === '') return refuse('the path is empty');
    // The service refuses such a name, after spending an update request on it.
    if (/[\\/]/.test(overrideName)) return refuse(`the file_name ${overrideName} holds / or \\, which a file name sent to the service may not`);
    const path = written.replace(/\\/g, '/');
    if (sep === '/' && /^[A-Za-z]:\//.test(path)) return refuse(`the path ${written} is a Windows absolute path; give it relative to the CSV's folder`);
    const rel = relative(resolve(dir), resolve(dir, path));
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return refuse(`the path ${written} leaves the CSV's folder`);
    const relPath = rel.split(sep).join('/').normalize('NFC');
    const full = join(dir, rel);
    const facts = await lookAt(full);
    if ('error' in facts) {
      const error = facts.error;
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return refuse(`no file at ${written} (paths are relative to the CSV's folder)`);
      return refuse(`${written} cannot be read (${error.code ?? String(error)})`);
    }
    const { info, real } = facts;
    if (info.isSymbolicLink()) return refuse(`${written} ${LINK_REFUSED}`);
    if (info.isDirectory()) return refuse(`${written} is a folder, not a file`);
    if (!info.isFile()) return refuse(`${written} is not a regular file`);
    if (real === null || real.startsWith(`..${sep}`) || isAbsolute(real)) return refuse(`the path ${written} leaves the CSV's folder through a linked folder`);
    const fileName = (overrideName || basename(rel)).normalize('NFC');
    return diskFile(full, { relPath, fileName, size: info.size, code });
  }

  async close(): Promise<void> {}
}
