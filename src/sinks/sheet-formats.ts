/**
 * A sheet download as text: CSV (the `headers` labels as the first row, one row per record) or
 * JSONL (one record per line, as the service sent it). Both are yielded in pieces of about 64 KB,
 * so a sheet of many members is written without building one string of it all.
 */
import { UTF8_BOM, csvRow } from '../util/csv.js';

export type SheetRecord = Record<string, unknown>;
export type SheetFormat = 'csv' | 'jsonl';

const PIECE_CHARS = 64 * 1024;

/** The format an output file name asks for, by its extension; null for any other name. */
export function formatOf(file: string): SheetFormat | null {
  const match = /\.(csv|jsonl)$/i.exec(file);
  return match ? (match[1]!.toLowerCase() as SheetFormat) : null;
}

/**
 * The CSV's columns: the fields `headers` labels, in its order, then any field a record holds that
 * `headers` does not name (labelled by its own name), so that no value is dropped.
 */
export function sheetColumns(headers: Record<string, string>, records: readonly SheetRecord[]): { keys: string[]; labels: string[] } {
  const keys = Object.keys(headers);
  const known = new Set(keys);
  for (const record of records) {
    for (const key of Object.keys(record)) {
      if (known.has(key)) continue;
      known.add(key);
      keys.push(key);
    }
  }
  return { keys, labels: keys.map((key) => headers[key] ?? key) };
}

function* inPieces(lines: Iterable<string>): Generator<string> {
  let piece = '';
  for (const line of lines) {
    piece += line;
    if (piece.length >= PIECE_CHARS) {
      yield piece;
      piece = '';
    }
  }
  if (piece) yield piece;
}

function* csvLines(headers: Record<string, string>, records: readonly SheetRecord[]): Generator<string> {
  const { keys, labels } = sheetColumns(headers, records);
  yield UTF8_BOM + csvRow(labels);
  for (const record of records) yield csvRow(keys.map((key) => record[key]));
}

function* jsonlLines(records: readonly SheetRecord[]): Generator<string> {
  for (const record of records) yield `${JSON.stringify(record)}\n`;
}

export function sheetText(format: SheetFormat, headers: Record<string, string>, records: readonly SheetRecord[]): Iterable<string> {
  return inPieces(format === 'csv' ? csvLines(headers, records) : jsonlLines(records));
}
