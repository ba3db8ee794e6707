/**
 * Validation of one attachment (api-v2.md 4.4 Sheets 9; DESIGN.md section 5): the name's extension
 * is one the service accepts, the bytes are of a type that extension may hold (a renamed program is
 * refused), the file is not empty and at most 5 MB.
 */
import { createHash } from 'node:crypto';
import type { SourceFile } from '../../../sources/source.js';
import { MAX_FILE_BYTES } from '../../../spec/limits.js';
import { GONE_REASON, isGone } from '../../../sources/file-rules.js';
import { ATTACHMENT_EXTENSIONS, extensionOf, isAttachmentExtension } from '../../../spec/extensions.js';
import { sniff } from './sniff.js';

export type AttachmentCheck = { ok: true } | { ok: false; reason: string };

// An application's variants (macro-enabled, template) pass under each other's extension, as a
// bare zip already does: the check stops a file of another kind, and the service checks names only.
const WORD = ['docx', 'docm', 'dotx', 'dotm'];
const EXCEL = ['xlsx', 'xlsm', 'xltx', 'xltm'];
const POWERPOINT = ['pptx', 'pptm', 'ppsx', 'ppsm', 'potx', 'potm'];
const CALC = ['ods', 'ots'];
const IMPRESS = ['odp', 'otp'];

/** The kinds (sniff.ts) each extension may hold. */
const ALLOWED: Record<string, string[]> = {
  txt: ['text'], csv: ['text'], xml: ['text'], htm: ['text'], html: ['text'], rtf: ['text'],
  doc: ['cfb'], xls: ['cfb'], ppt: ['cfb'], msg: ['cfb'],
  docx: [...WORD, 'zip'], xlsx: [...EXCEL, 'zip'], xlsm: [...EXCEL, 'zip'], pptx: [...POWERPOINT, 'zip'],
  odp: [...IMPRESS, 'zip'], ods: [...CALC, 'zip'],
  zip: ['zip', ...WORD, ...EXCEL, ...POWERPOINT, ...CALC, ...IMPRESS, 'odt', 'ott', 'odg', 'otg', 'epub', 'jar'],
  pdf: ['pdf'], jpeg: ['jpg'], jpg: ['jpg'], gif: ['gif'], png: ['png'], tif: ['tif'],
  // DocuWorks has no signature file-type knows: anything but a recognised other type.
  xdw: ['unknown', 'text'],
};

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
  const { kind, what } = await sniff(data);
  if (!(ALLOWED[ext] ?? []).includes(kind)) return { ok: false, reason: `the name says .${ext} but the bytes are ${what}` };
  return { ok: true };
}

/** What the check stage makes of one file: its size and sha256, or why it cannot go. */
export type AttachmentVerdict = { ok: true; size: number; sha256: string } | { ok: false; reason: string; gone?: boolean };

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
    if (isGone(error)) return { ok: false, reason: GONE_REASON, gone: true };
    const message = (error as Error).message;
    return { ok: false, reason: message.includes('limit') ? `over the 5 MB limit (${MAX_FILE_BYTES.toLocaleString('en-US')} bytes)` : message };
  }
  const check = await checkAttachment(file.fileName, data);
  if (!check.ok) return check;
  return { ok: true, size: data.length, sha256: createHash('sha256').update(data).digest('hex') };
}
