/**
 * Validation of one attachment (api-v2.md 4.4 Sheets 9; DESIGN.md section 5): the name's extension
 * is one the service accepts, the bytes are of a type that extension may hold (a renamed program is
 * refused), the file is not empty and at most 5 MB.
 */
import { createHash } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import type { SourceFile } from '../sources/source.js';
import { MAX_FILE_BYTES } from '../spec/limits.js';
import { ATTACHMENT_EXTENSIONS, extensionOf, isAttachmentExtension } from '../spec/extensions.js';

export type AttachmentCheck = { ok: true } | { ok: false; reason: string };

/** Detected types (file-type's `ext`) each extension may hold; `text` stands for no binary signature and no NUL bytes. */
const ALLOWED: Record<string, string[]> = {
  txt: ['text'], csv: ['text'], xml: ['text', 'xml'], htm: ['text', 'xml'], html: ['text', 'xml'], rtf: ['text', 'rtf'],
  doc: ['cfb'], xls: ['cfb'], ppt: ['cfb'], msg: ['cfb'],
  docx: ['docx', 'zip'], xlsx: ['xlsx', 'zip'], xlsm: ['xlsx', 'zip'], pptx: ['pptx', 'zip'],
  odp: ['odp', 'zip'], ods: ['ods', 'zip'], zip: ['zip', 'docx', 'xlsx', 'pptx', 'odp', 'ods', 'odt', 'epub', 'jar'],
  pdf: ['pdf'], jpeg: ['jpg'], jpg: ['jpg'], gif: ['gif'], png: ['png'], tif: ['tif'],
  // DocuWorks has no signature file-type knows: anything but a recognised other type.
  xdw: ['unknown', 'text'],
};

function looksLikeText(data: Buffer): boolean {
  const head = data.subarray(0, 8192);
  return !head.includes(0);
}

/** Why the name alone rules the file out (an extension off the list), or null; needs no bytes, so it comes before reading. */
export function extensionProblem(fileName: string): string | null {
  const ext = extensionOf(fileName);
  if (isAttachmentExtension(ext)) return null;
  return `the extension ${ext ? `.${ext}` : '(none)'} is not accepted for attachments (accepted: ${ATTACHMENT_EXTENSIONS.join(', ')})`;
}

export async function checkAttachment(fileName: string, data: Buffer): Promise<AttachmentCheck> {
  const byName = extensionProblem(fileName);
  if (byName) return { ok: false, reason: byName };
  const ext = extensionOf(fileName);
  if (data.length === 0) return { ok: false, reason: 'the file is empty' };
  if (data.length > MAX_FILE_BYTES) {
    return { ok: false, reason: `${data.length.toLocaleString('en-US')} bytes is over the 5 MB limit (${MAX_FILE_BYTES.toLocaleString('en-US')} bytes)` };
  }
  const detected = await fileTypeFromBuffer(data);
  const kind = detected ? (detected.ext === 'jpeg' ? 'jpg' : detected.ext) : looksLikeText(data) ? 'text' : 'unknown';
  const allowed = ALLOWED[ext] ?? [];
  if (!allowed.includes(kind)) {
    const what = detected ? `${detected.mime} (.${detected.ext})` : kind === 'text' ? 'plain text' : 'binary data of no known type';
    return { ok: false, reason: `the name says .${ext} but the bytes are ${what}` };
  }
  return { ok: true };
}

/** What the check stage makes of one file: its size and sha256, or why it cannot go. */
export type AttachmentVerdict = { ok: true; size: number; sha256: string } | { ok: false; reason: string };

/**
 * The check stage for one attachment: the name first (a program of 40 MB is refused for what it
 * is, not for its size, and is never read), then its bytes, held only while they are checked.
 */
export async function checkAttachmentFile(file: SourceFile): Promise<AttachmentVerdict> {
  const byName = extensionProblem(file.fileName);
  if (byName) return { ok: false, reason: byName };
  let data: Buffer;
  try {
    data = await file.read(MAX_FILE_BYTES + 1);
  } catch (error) {
    const message = (error as Error).message;
    return { ok: false, reason: message.includes('limit') ? `over the 5 MB limit (${MAX_FILE_BYTES.toLocaleString('en-US')} bytes)` : message };
  }
  const check = await checkAttachment(file.fileName, data);
  if (!check.ok) return check;
  return { ok: true, size: data.length, sha256: createHash('sha256').update(data).digest('hex') };
}
