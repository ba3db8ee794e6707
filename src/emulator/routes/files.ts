/** Checks shared by the face image and attachment operations (api-v2.md 4.4 Members 7, Sheets 9). */
import { MAX_FILE_BYTES } from '../../spec/limits.js';

/**
 * Standard padded base64 without a `data:` prefix (wire-format.md), or null. Node's decoder skips
 * characters outside the alphabet and stops at inner padding, so a decoded length short of what
 * the text's length promises means the text was not base64; it also takes the URL-safe `-` and
 * `_`, which standard base64 does not have. Checked this way rather than by a regular expression,
 * which costs more than the decoding itself on bodies of 250 MB.
 */
export function decodeBase64Strict(text: string): Buffer | null {
  if (text.length % 4 !== 0) return null;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const data = Buffer.from(text, 'base64');
  if (data.length !== (text.length / 4) * 3 - padding) return null;
  if (text.includes('-') || text.includes('_')) return null;
  return data;
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
