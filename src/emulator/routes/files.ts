/** Checks shared by the face image and attachment operations (api-v2.md 4.4 Members 7, Sheets 9). */
import { MAX_FILE_BYTES } from '../../spec/limits.js';

/**
 * The alphabet alone, as one flat character class: a grouped pattern such as
 * `^(?:[A-Za-z0-9+/]{4})*...$` overflows V8's regexp stack on a few megabytes of text (a 5 MB
 * file is 7 MB of base64), so length and padding are checked apart.
 */
const BASE64_ALPHABET = /^[A-Za-z0-9+/]*$/;

/** Standard padded base64 without a `data:` prefix (wire-format.md), or null. */
export function decodeBase64Strict(text: string): Buffer | null {
  if (text.length % 4 !== 0) return null;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  if (!BASE64_ALPHABET.test(text.slice(0, text.length - padding))) return null;
  return Buffer.from(text, 'base64');
}

export type DecodedFile = { ok: true; data: Buffer } | { ok: false; problem: string };

/** Decodes a file of a request and applies the size rule; `what` names it in the message. */
export function decodeFile(text: string, what: string): DecodedFile {
  if (text.startsWith('data:')) return { ok: false, problem: `${what}: the base64 content must not carry a data: prefix` };
  const data = decodeBase64Strict(text);
  if (!data) return { ok: false, problem: `${what}: the content is not valid padded base64` };
  if (data.length === 0) return { ok: false, problem: `${what}: the file is empty` };
  if (data.length > MAX_FILE_BYTES) {
    return { ok: false, problem: `${what}: the file is ${data.length} bytes, over the limit of ${MAX_FILE_BYTES} bytes (5 MB)` };
  }
  return { ok: true, data };
}

/** `updated_since` (YYYY-MM-DD): files updated on or after that day. */
export function updatedSinceFilter(value: string | null): (updatedAt: string) => boolean {
  if (value === null) return () => true;
  return (updatedAt) => updatedAt.slice(0, 10) >= value;
}
