/**
 * Attachments, the file parts of sheets (api-v2.md 4.4 Sheets 6 to 9; wire-format.md,
 * Attachments): the listing of download URLs, register and partial update.
 */
import { createTask, intParam, parseBody, requireNonEmpty, type RouteContext, type RouteHandler, type TaskPlan } from '../context.js';
import { decodeFile, updatedSinceFilter } from '../files.js';
import { findFileField, findSheet, isMultiRecord } from '../sheet-common.js';
import { recalculate } from '../formula.js';
import { badRequest } from '../../http-error.js';
import type { SheetRecord, SheetState } from '../../model.js';
import { attachmentBodySchema } from '../../../spec/schemas.js';
import { MAX_ATTACHMENTS_PER_REQUEST } from '../../../spec/limits.js';
import { extensionOf, isAttachmentExtension } from '../../../spec/extensions.js';
import { isValidDate } from '../../../spec/time.js';
import { peekEntry, sortedCodes } from '../../lazy-record.js';
import { JsonParts } from '../../send.js';

export const listAttachments: RouteHandler = (ctx) => {
  const sheet = findSheet(ctx.company, intParam(ctx, 'sheet_id'));
  const field = findFileField(sheet, intParam(ctx, 'custom_field_id'));
  const since = ctx.query.get('updated_since');
  if (since !== null && !isValidDate(since)) throw badRequest(`updated_since must be a date YYYY-MM-DD, got "${since}"`);
  const keep = updatedSinceFilter(since);
  // Walked, not collected: a generated company makes each member's records only to list them (lazy-record.ts).
  function* member_data(): Generator<unknown> {
    for (const code of sortedCodes(sheet.records)) {
      const records = [];
      // Only records that hold a file are listed (4.4 Sheets 6).
      for (const record of peekEntry(sheet.records, code)!) {
        const file = record.files[String(field.id)];
        if (!file || !keep(file.updated_at)) continue;
        const { url } = ctx.storage.signUrl(ctx.baseUrl, ctx.company, file.blob, file.file_name);
        records.push({ file_name: file.file_name, download_url: url, updated_at: file.updated_at });
      }
      if (records.length) yield { code, records };
    }
  }
  return { body: JsonParts.withList({}, 'member_data', member_data()) };
};

type Mode = 'register' | 'update';

interface PreparedFile {
  code: string;
  fileName: string;
  problem?: string;
  data?: Buffer;
}

/** A file name the service can hold: not empty, no path, an accepted extension (4.4 Sheets 9). */
function fileNameProblem(code: string, fileName: string): string | undefined {
  const what = `member ${code}: file "${fileName}"`;
  if (!fileName.trim()) return `member ${code}: a file_name is empty`;
  if (/[\\/]/.test(fileName)) return `${what}: a file name must not contain / or \\`;
  const ext = extensionOf(fileName);
  if (!isAttachmentExtension(ext)) {
    return `${what}: the extension ${ext ? `.${ext}` : '(none)'} is not accepted for attachments`;
  }
  return undefined;
}

function attachmentWriter(mode: Mode): RouteHandler {
  return (ctx: RouteContext) => {
    const sheet = findSheet(ctx.company, intParam(ctx, 'sheet_id'));
    const field = findFileField(sheet, intParam(ctx, 'custom_field_id'));
    const body = parseBody(attachmentBodySchema, ctx.body);
    requireNonEmpty(body.member_data, 'member_data');
    const count = body.member_data.reduce((n, m) => n + m.records.length, 0);
    if (count === 0) throw badRequest('member_data holds no file records');
    if (count > MAX_ATTACHMENTS_PER_REQUEST) {
      throw badRequest(`the request holds ${count} files, over the limit of ${MAX_ATTACHMENTS_PER_REQUEST} per request`);
    }
    const prepared: PreparedFile[] = [];
    for (const member of body.member_data) {
      for (const record of member.records) {
        const base = { code: member.code, fileName: record.file_name };
        const nameProblem = fileNameProblem(member.code, record.file_name);
        if (nameProblem) {
          prepared.push({ ...base, problem: nameProblem });
          continue;
        }
        const decoded = decodeFile(record.base64_content, `member ${member.code}: file "${record.file_name}"`);
        prepared.push(decoded.ok ? { ...base, data: decoded.data } : { ...base, problem: decoded.problem });
      }
    }
    return createTask(ctx, count, () => planAttachments(ctx, sheet.def.id, field.id, mode, prepared));
  };
}

function planAttachments(ctx: RouteContext, sheetId: number, fieldId: number, mode: Mode, prepared: PreparedFile[]): TaskPlan {
  const { company } = ctx;
  const sheet: SheetState | undefined = company.data.sheets[String(sheetId)];
  if (!sheet) return { errors: [`sheet ${sheetId} no longer exists`], apply: () => undefined };
  const key = String(fieldId);
  const multi = isMultiRecord(sheet);
  const errors: string[] = [];
  const changes: (() => void)[] = [];
  const named = new Map<string, number>();
  const singleTaken = new Set<string>();

  for (const item of prepared) {
    const what = `member ${item.code}: file "${item.fileName}"`;
    if (!company.data.members[item.code]) {
      errors.push(`member ${item.code}: no member has this code`);
      continue;
    }
    if (item.problem) {
      errors.push(item.problem);
      continue;
    }
    const records = sheet.records[item.code] ?? [];
    const nameKey = `${item.code}\u0000${item.fileName}`;
    named.set(nameKey, (named.get(nameKey) ?? 0) + 1);
    const holding = records.filter((r) => r.files[key]?.file_name === item.fileName);

    if (mode === 'register') {
      if (!multi) {
        // Single-record sheet: allowed only while the member holds no file there (4.4 Sheets 7).
        if (records[0]?.files[key] || singleTaken.has(item.code)) {
          errors.push(`${what}: the member already holds a file in this single-record sheet field; use partial update`);
          continue;
        }
        singleTaken.add(item.code);
        changes.push(() => {
          const list = (sheet.records[item.code] ??= []);
          const record: SheetRecord = list[0] ?? { values: {}, files: {} };
          if (!list.length) list.push(record);
          record.files[key] = company.storeFile(item.data!, item.fileName);
          recalculate(sheet.def.fields, record);
        });
        continue;
      }
      // Multiple-record sheet: file names must not repeat the member's uploaded ones (4.4 Sheets 7).
      if (holding.length || named.get(nameKey)! > 1) {
        errors.push(`${what}: the member already holds a file with this name in this field; file names must not repeat (use partial update to replace it)`);
        continue;
      }
      changes.push(() => {
        const list = (sheet.records[item.code] ??= []);
        const record: SheetRecord = { values: {}, files: { [key]: company.storeFile(item.data!, item.fileName) } };
        // A new record gets its formula parts like any registration (4.4 Sheets 11).
        recalculate(sheet.def.fields, record);
        list.push(record);
      });
      continue;
    }

    // Partial update: replaces the file of the same name (4.4 Sheets 8).
    if (named.get(nameKey)! > 1) {
      errors.push(`${what}: named more than once for this member in one request`);
      continue;
    }
    if (holding.length === 0) {
      errors.push(`${what}: the member holds no file with this name in this field; partial update replaces an existing file (use register)`);
      continue;
    }
    if (holding.length > 1) {
      errors.push(`${what}: the member holds ${holding.length} records with this file name; partial update cannot choose one`);
      continue;
    }
    const target = holding[0]!;
    changes.push(() => {
      target.files[key] = company.storeFile(item.data!, item.fileName, target.files[key]);
    });
  }
  return {
    errors,
    apply: () => {
      for (const change of changes) change();
      sheet.updated_at = company.now();
    },
  };
}

export const registerAttachments = attachmentWriter('register');
export const updateAttachments = attachmentWriter('update');
