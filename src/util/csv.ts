/**
 * CSV as Excel and RFC 4180 readers both take it: UTF-8 with a byte order mark (without it Excel
 * reads UTF-8 as the local code page and garbles Japanese names), CRLF line ends, and a cell quoted
 * when it holds a comma, a quote, a line break or surrounding spaces, with its quotes doubled.
 */

/** The UTF-8 byte order mark. */
export const UTF8_BOM = '\uFEFF';

const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/;

/** One cell: text as it is; numbers and flags as written in JSON; no value as an empty cell; lists and objects as JSON, so nothing is lost. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

export function csvCell(value: unknown): string {
  const text = cellText(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvRow(values: readonly unknown[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}
