/** Checks shared by the face image and attachment operations (api-v2.md 4.4 Members 7, Sheets 9). */
import { MAX_FILE_BYTES } from '../../spec/limits.js';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard padded base64 without a `data:` prefix (wire-format.md), or null. */
export function decodeBase64Strict(text: string): Buffer | null {
  if (!BASE64.test(text)) return null;
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
