/**
 * The type of a file by its bytes (file-type), as the photo and attachment checks compare it with
 * what the name or the service allows (DESIGN.md section 5). Variants of one format are folded
 * into it, and text is told apart from binary data where file-type guesses wrong.
 */
import { fileTypeFromBuffer, type FileTypeResult } from 'file-type';

export interface Sniffed {
  /**
   * file-type's `ext`, with `jpeg` as `jpg` and `apng` as `png`; `text` for text (a format made of
   * text, UTF-16 with its byte order mark, or no signature and no NUL bytes); `unknown` otherwise.
   */
  kind: string;
  /** The type as a message names it: "image/png (.png)", "plain text". */
  what: string;
}

/** Another name for the same format: an animated PNG is a PNG every PNG decoder reads (its first frame). */
const SAME_FORMAT: Record<string, string> = { jpeg: 'jpg', apng: 'png' };

/** Formats file-type recognises that are text by definition, so they may be in a .txt or .csv. */
const TEXT_FORMATS = new Set(['xml', 'rtf', 'vtt', 'ics', 'vcf']);

/** Control characters that text holds: tab, line feed, form feed, carriage return. */
const TEXT_CONTROLS = new Set([0x09, 0x0a, 0x0c, 0x0d]);

/** How much of the start is looked at to call a file text. */
const TEXT_HEAD = 8192;

/**
 * UTF-16 text with its byte order mark (Excel's "Unicode text" CSV starts FF FE). file-type takes
 * FF FE for an MPEG audio frame, so the code units after the mark decide: control characters
 * other than those of text say it is binary data after all.
 */
function isUtf16Text(data: Buffer): boolean {
  const little = data[0] === 0xff && data[1] === 0xfe;
  const big = data[0] === 0xfe && data[1] === 0xff;
  if (!little && !big) return false;
  const end = Math.min(data.length, TEXT_HEAD) & ~1;
  for (let at = 2; at < end; at += 2) {
    const unit = little ? data.readUInt16LE(at) : data.readUInt16BE(at);
    if (unit < 0x20 && !TEXT_CONTROLS.has(unit)) return false;
  }
  return true;
}

/** A detected type as a message names it; file-type gives no mime for a few formats (pptm). */
function describe({ ext, mime }: FileTypeResult): string {
  return mime ? `${mime} (.${ext})` : `a .${ext} file`;
}

export async function sniff(data: Buffer): Promise<Sniffed> {
  const detected = await fileTypeFromBuffer(data);
  if (detected && TEXT_FORMATS.has(detected.ext)) return { kind: 'text', what: describe(detected) };
  if (isUtf16Text(data)) return { kind: 'text', what: 'plain text (UTF-16)' };
  if (detected) return { kind: SAME_FORMAT[detected.ext] ?? detected.ext, what: describe(detected) };
  if (!data.subarray(0, TEXT_HEAD).includes(0)) return { kind: 'text', what: 'plain text' };
  return { kind: 'unknown', what: 'binary data of no known type' };
}
