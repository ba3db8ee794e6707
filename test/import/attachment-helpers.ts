/**
 * Making real attachment files in tests (./attachment-files.ts; zips through archiver in
 * ../sources/helpers.ts), running the attachment import against the test emulator,
 * arranging files in the emulator directly, and a proxy that records every attachment request as
 * it streams by: its body size, and on request the files it carried.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runAttachmentImport, type AttachmentImportOptions, type AttachmentImportResult } from '../../src/pipelines/attachment-import.js';
import { openSource } from '../../src/sources/open-source.js';
import type { SheetRecord } from '../../src/emulator/model.js';
import type { WdsClient } from '../../src/index.js';
import type { TestEmulator } from '../helpers/emulator.js';
import { companyOf } from '../helpers/fixtures.js';
import { state, type StateAttachment } from '../helpers/export.js';
import { sha256, stats } from './photo-helpers.js';

export { exe, pdf } from './attachment-files.js';

export const ATTACHMENT_ROUTE = '/sheets/:sheet_id/custom_fields/:custom_field_id/file';
/** The sample company's and generated companies' file parts (samples/company/README.md). */
export interface FilePart {
  sheet: number;
  field: number;
}
export const CONTRACT: FilePart = { sheet: 1, field: 1204 };
export const QUALIFICATIONS: FilePart = { sheet: 2, field: 1306 };

/** The attachment import of a folder, zip, CSV or export. */
export async function importAttachments(
  client: WdsClient,
  path: string,
  options: Omit<AttachmentImportOptions, 'client' | 'source'> = {},
): Promise<AttachmentImportResult> {
  return runAttachmentImport({ client, source: await openSource(path), ...options });
}

/** The report's outcome for every file, by its path relative to `dir`. */
export function outcomesUnder(result: AttachmentImportResult, dir: string): Record<string, string> {
  return Object.fromEntries(result.report.items.map((i) => [(i.path ?? i.key).slice(dir.length + 1), i.outcome]));
}

/** Register (POST) and partial update (PATCH) attachment requests counted by the emulator. */
export async function attachmentRequests(emu: TestEmulator): Promise<{ register: number; update: number; rateLimited: number }> {
  const s = await stats(emu);
  return { register: s.requests[`POST ${ATTACHMENT_ROUTE}`] ?? 0, update: s.requests[`PATCH ${ATTACHMENT_ROUTE}`] ?? 0, rateLimited: s.rate_limited };
}

/** What identifies an attachment and its content in `/_emulator/state` (not when it was stored). */
export type AttachmentFacts = Omit<StateAttachment, 'updated_at' | 'size'>;

export const factsOf = (list: StateAttachment[]): AttachmentFacts[] =>
  list.map(({ sheet_id, custom_field_id, code, record_index, file_name, sha256: hash }) => ({ sheet_id, custom_field_id, code, record_index, file_name, sha256: hash }))
    .sort((a, b) => a.sheet_id - b.sheet_id || a.custom_field_id - b.custom_field_id || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0) || a.record_index - b.record_index);

export const attachmentFacts = async (emu: TestEmulator): Promise<AttachmentFacts[]> => factsOf((await state(emu)).attachments);

/** One member's files in one file part, in record order. */
export async function recordsOf(emu: TestEmulator, where: FilePart, code: string): Promise<{ file_name: string; sha256: string; record_index: number }[]> {
  return (await attachmentFacts(emu))
    .filter((a) => a.sheet_id === where.sheet && a.custom_field_id === where.field && a.code === code)
    .map(({ file_name, sha256: hash, record_index }) => ({ file_name, sha256: hash, record_index }));
}

/**
 * Someone else uploads a file in the service: a new record holding it on a multiple-record sheet,
 * arranged in the in-process emulator without a request.
 */
export function addRecordWithFile(emu: TestEmulator, where: FilePart, code: string, fileName: string, data: Buffer): void {
  const company = companyOf(emu);
  const sheet = company.data.sheets[String(where.sheet)];
  if (!sheet) throw new Error(`no sheet ${where.sheet}`);
  const record: SheetRecord = { values: {}, files: { [String(where.field)]: company.storeFile(data, fileName) } };
  (sheet.records[code] ??= []).push(record);
}

export interface SentAttachment {
  code: string;
  file_name: string;
  size: number;
  sha256: string;
}

export interface SentRequest {
  method: string;
  sheetId: number;
  fieldId: number;
  /** Bytes of the JSON body as it went by. */
  bodyBytes: number;
  dryRun: boolean;
  /** The files it carried, in body order; null when the proxy was told not to decode. */
  files: SentAttachment[] | null;
}

export interface AttachmentProxy {
  url: string;
  /** Whether the files of the next requests are decoded; may be changed between runs. */
  decode: boolean;
  /** Every attachment register and update request, in the order their bodies ended. */
  sent: SentRequest[];
  close: () => Promise<void>;
}

const WRITE_PATH = /^\/api\/v2\.0\/sheets\/(\d+)\/custom_fields\/(\d+)\/file(?:\?|$)/;

/**
 * A proxy in front of the emulator that streams every request through unchanged and records each
 * attachment write: the body's size always, and while `decode` is on its files (the body is then
 * kept in memory to be parsed, so turn it off for bodies of hundreds of megabytes). With
 * `holdFirstWriteMs`, the answer to the first write is held back that long (a slow service).
 */
export async function startAttachmentProxy(target: string, options: { decode?: boolean; holdFirstWriteMs?: number } = {}): Promise<AttachmentProxy> {
  const upstream = new URL(target);
  const sent: SentRequest[] = [];
  let writes = 0;
  const proxy: AttachmentProxy = {
    url: '',
    decode: options.decode ?? false,
    sent,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  const server: Server = createServer((req, res) => {
    const match = WRITE_PATH.exec(req.url ?? '');
    const isWrite = match !== null && (req.method === 'POST' || req.method === 'PATCH');
    const decode = proxy.decode;
    const chunks: Buffer[] = [];
    let bytes = 0;
    if (isWrite) {
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        if (decode) chunks.push(c);
      });
      req.on('end', () => {
        let files: SentAttachment[] | null = null;
        if (decode) {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { member_data: { code: string; records: { file_name: string; base64_content: string }[] }[] };
          files = body.member_data.flatMap((m) => m.records.map((r) => {
            const data = Buffer.from(r.base64_content, 'base64');
            return { code: m.code, file_name: r.file_name, size: data.length, sha256: sha256(data) };
          }));
        }
        sent.push({ method: req.method!, sheetId: Number(match[1]), fieldId: Number(match[2]), bodyBytes: bytes, dryRun: req.headers['dry-run'] === '1', files });
      });
    }
    const holdMs = isWrite && writes++ === 0 ? options.holdFirstWriteMs ?? 0 : 0;
    const forward = request({ hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      setTimeout(() => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      }, holdMs);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  proxy.url = `http://127.0.0.1:${port}`;
  return proxy;
}

/** Every file the proxy saw sent, as `METHOD code/file_name`. */
export const sentNames = (proxy: AttachmentProxy): string[] =>
  proxy.sent.flatMap((r) => (r.files ?? []).map((f) => `${r.method} ${f.code}/${f.file_name}`));
