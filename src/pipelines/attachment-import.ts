/**
 * The attachment import (issue 5; DESIGN.md section 5): every file checked before anything is sent
 * (extension, real type, 5 MB), its sheet and file part resolved (an export's manifest, the export
 * layout `attachments/<sheet>/<field>/<code>/<file>`, or `<code>/<file>` with --sheet --field),
 * the field confirmed as a file part from the layouts, duplicate names found within the source and
 * against the current listing, then register (add) or partial update (replace) requests of at most
 * 1,000 files and 250 MB of body each, base64 counted as 4/3, each member's records in source order.
 */
import type { WdsClient } from '../client/client.js';
import type { ImportSource, SourceFile } from '../sources/source.js';
import { checkAttachment, extensionProblem } from '../stages/attachment-check.js';
import { jsonStringBytes, minimumBatches, planGroupedBatches } from '../stages/batch.js';
import { mentionsCode, submitBatch, type SubmitStats } from '../stages/submit.js';
import { RunReport, type ItemReport } from '../stages/report.js';
import { base64Length, MAX_ATTACHMENTS_PER_REQUEST, MAX_FILE_BYTES } from '../spec/limits.js';

export type AttachmentImportMode = 'upsert' | 'add' | 'replace';

export interface AttachmentImportOptions {
  client: WdsClient;
  source: ImportSource;
  /** With a plain `<code>/<file>` source: where the files go. */
  sheet?: number;
  field?: number;
  /** upsert (default): replace a file of the same name, else add; add: register only; replace: update only. */
  mode?: AttachmentImportMode;
  dryRun?: boolean;
  /**
   * Aborted by the CLI on SIGINT or SIGTERM (reason: the signal's name): nothing new is sent, the
   * request in flight and its task are followed to their end, and the run returns with
   * `report.interrupted` set.
   */
  signal?: AbortSignal;
  /**
   * While checking, the files checked so far; once every file is checked, `total` (= `done`) is
   * the number ready to send; while sending, the files whose request has ended, of `total`.
   */
  onProgress?: (progress: { stage: 'check' | 'send'; done: number; total?: number }) => void;
}

interface ReadyFile {
  file: SourceFile;
  code: string;
  fileName: string;
  sheetId: number;
  fieldId: number;
  size: number;
  order: number;
}

export interface AttachmentImportResult {
  report: RunReport;
  requests: { register: number; update: number; minimum: number; resubmitted: number };
  waitedMs: number;
  checkMs: number;
}

const LAYOUT_PATH = /^(?:.*\/)?attachments\/(\d+)\/(\d+)\/([^/]+)\/([^/]+)$/;

/** Where a file goes: the source's own say, the export layout, or `<code>/<file>` with --sheet --field. */
function placeOf(file: SourceFile, options: AttachmentImportOptions): { sheetId: number; fieldId: number; code: string } | string {
  if (file.code !== undefined && file.sheetId !== undefined && file.fieldId !== undefined) {
    return { sheetId: file.sheetId, fieldId: file.fieldId, code: file.code };
  }
  const layout = LAYOUT_PATH.exec(file.relPath);
  if (options.sheet === undefined && layout) return { sheetId: Number(layout[1]), fieldId: Number(layout[2]), code: file.code ?? layout[3]! };
  if (options.sheet === undefined || options.field === undefined) {
    return 'the sheet and file part are unknown: use an export (attachments/<sheet>/<field>/<code>/<file>) or give --sheet and --field';
  }
  if (file.code !== undefined) return { sheetId: options.sheet, fieldId: options.field, code: file.code };
  const parts = file.relPath.split('/');
  if (parts.length < 2) return `the member is unknown: put the file in a folder named by the member code (<code>/${file.fileName}) or list it in a CSV`;
  return { sheetId: options.sheet, fieldId: options.field, code: parts[parts.length - 2]! };
}

const BODY_OVERHEAD = Buffer.byteLength('{"member_data":[]}');
/** A record in its own member element: the worst case, so a planned batch always fits. */
const itemBytes = (f: ReadyFile): number =>
  Buffer.byteLength('{"code":,"records":[{"file_name":,"base64_content":""}]}') + jsonStringBytes(f.code) + jsonStringBytes(f.fileName) + base64Length(f.size);

async function* attachmentBody(items: ReadyFile[]): AsyncGenerator<Buffer> {
  yield Buffer.from('{"member_data":[');
  for (const [i, item] of items.entries()) {
    const data = await item.file.read(MAX_FILE_BYTES);
    yield Buffer.from(`${i ? ',' : ''}{"code":${JSON.stringify(item.code)},"records":[{"file_name":${JSON.stringify(item.fileName)},"base64_content":"`);
    yield Buffer.from(data.toString('base64'));
    yield Buffer.from('"}]}');
  }
  yield Buffer.from(']}');
}

/**
 * Whether a task message is about this file: it names the member, and this file among the member's
 * files of the batch, or none of them (then it is about the member, so every file of it). Names
 * are matched in quotes first, then as text where the longest wins, so that "3.pdf" is not
 * blamed for a message about "new-3.pdf".
 */
function messageNamesFile(item: ReadyFile, message: string, batch: ReadyFile[]): boolean {
  if (!mentionsCode(item.code, message)) return false;
  const own = [...new Set(batch.filter((o) => o.code === item.code).map((o) => o.fileName))];
  const quoted = own.filter((n) => message.includes(JSON.stringify(n)) || message.includes(`"${n}"`));
  if (quoted.length) return quoted.includes(item.fileName);
  const found = own.filter((n) => message.includes(n));
  if (!found.length) return true;
  return found.includes(item.fileName) && !found.some((n) => n !== item.fileName && n.includes(item.fileName));
}

export async function runAttachmentImport(options: AttachmentImportOptions): Promise<AttachmentImportResult> {
  const { client, source } = options;
  const mode = options.mode ?? 'upsert';
  const report = new RunReport(`attachments import${options.dryRun ? ' (dry run)' : ''}`);
  const waitedBefore = client.transport.counters.waitedMs;
  const reject = (file: { where: string; fileName?: string; relPath: string }, code: string, outcome: ItemReport['outcome'], reason: string): void => {
    report.add({ key: file.where, code, file_name: file.fileName ?? file.relPath, outcome, reason, path: file.where });
  };
  try {
    // 1. Layouts: which sheet fields are file parts, and which sheets hold several records.
    const layouts = await client.sheets.layouts();
    const fileParts = new Map<string, { multi: boolean }>();
    for (const l of layouts) {
      for (const f of l.custom_fields) if (f.type_detail === 'attach_file') fileParts.set(`${l.id}:${f.id}`, { multi: l.record_type === 1 });
    }

    // 2. Check every file before anything is sent.
    const checkStarted = Date.now();
    const ready: ReadyFile[] = [];
    let order = 0;
    for await (const entry of source.entries()) {
      if (entry.kind === 'refused') {
        reject(entry.refused, '', 'invalid', entry.refused.reason);
        continue;
      }
      const file = entry.file;
      const place = placeOf(file, options);
      if (typeof place === 'string') {
        reject(file, file.code ?? '', 'invalid', place);
        continue;
      }
      if (!fileParts.has(`${place.sheetId}:${place.fieldId}`)) {
        reject(file, place.code, 'invalid', `custom field ${place.fieldId} of sheet ${place.sheetId} is not a file part (see the sheet layouts)`);
        continue;
      }
      // The name first: a program of 40 MB is refused for what it is, not for its size.
      const byName = extensionProblem(file.fileName);
      if (byName) {
        reject(file, place.code, 'invalid', byName);
        continue;
      }
      let data: Buffer;
      try {
        data = await file.read(MAX_FILE_BYTES + 1);
      } catch (error) {
        reject(file, place.code, 'invalid', (error as Error).message.includes('limit') ? `over the 5 MB limit (${MAX_FILE_BYTES.toLocaleString('en-US')} bytes)` : (error as Error).message);
        continue;
      }
      const check = await checkAttachment(file.fileName, data);
      if (!check.ok) {
        reject(file, place.code, 'invalid', check.reason);
        continue;
      }
      ready.push({ file, code: place.code, fileName: file.fileName, sheetId: place.sheetId, fieldId: place.fieldId, size: data.length, order: order++ });
      options.onProgress?.({ stage: 'check', done: order });
    }
    options.onProgress?.({ stage: 'check', done: order, total: order });
    const checkMs = Date.now() - checkStarted;

    // 3. Against the current listing of each file part involved, and against each other.
    const members = new Set((await client.members.list()).member_data.map((m) => m.code));
    const targets = [...new Set(ready.map((r) => `${r.sheetId}:${r.fieldId}`))];
    const register: ReadyFile[] = [];
    const update: ReadyFile[] = [];
    for (const target of targets) {
      const [sheetId, fieldId] = target.split(':').map(Number) as [number, number];
      const multi = fileParts.get(target)!.multi;
      const held = new Map<string, string[]>();
      for (const m of await client.attachments.list(sheetId, fieldId)) held.set(m.code, m.records.map((r) => r.file_name));
      const sourceNames = new Map<string, number>();
      const singleTaken = new Set<string>();
      for (const item of ready.filter((r) => `${r.sheetId}:${r.fieldId}` === target)) {
        const where = `sheet ${sheetId} field ${fieldId}`;
        if (!members.has(item.code)) {
          reject(item.file, item.code, 'invalid', `no member has the code ${item.code}`);
          continue;
        }
        const names = held.get(item.code) ?? [];
        const same = names.filter((n) => n === item.fileName).length;
        const key = `${item.code}\u0000${item.fileName}`;
        const repeats = (sourceNames.get(key) ?? 0) + 1;
        sourceNames.set(key, repeats);
        if (!multi && singleTaken.has(item.code)) {
          reject(item.file, item.code, 'conflict', `member ${item.code} has more than one file for the single-record ${where}; it holds one file`);
          continue;
        }
        if (!multi) singleTaken.add(item.code);
        if (repeats > 1) {
          reject(item.file, item.code, 'conflict', `a second file named "${item.fileName}" for member ${item.code} in ${where}: the service refuses a repeated name (4.4 Sheets 7) and cannot tell the two apart on update (4.4 Sheets 8)`);
          continue;
        }
        const wantsUpdate = mode === 'replace' || (mode === 'upsert' && same > 0);
        if (wantsUpdate) {
          if (same === 0) {
            reject(item.file, item.code, 'conflict', `member ${item.code} holds no file named "${item.fileName}" in ${where}; replace needs one (use --mode add or upsert)`);
          } else if (same > 1) {
            reject(item.file, item.code, 'conflict', `member ${item.code} holds ${same} records with a file named "${item.fileName}" in ${where}; the service cannot replace one of them (4.4 Sheets 8)`);
          } else update.push(item);
          continue;
        }
        if (same > 0) {
          reject(item.file, item.code, 'conflict', `member ${item.code} already holds a file named "${item.fileName}" in ${where}; names must not repeat (use --mode replace or upsert)`);
        } else if (!multi && names.length > 0) {
          reject(item.file, item.code, 'conflict', `member ${item.code} already holds "${names[0]}" in the single-record ${where}; only a file of the same name can replace it`);
        } else register.push(item);
      }
    }

    // 4. Fewest requests: per file part and route, 1,000 files and 250 MB of body each.
    const stats: SubmitStats = { requests: 0, resubmitted: 0 };
    const sent = { register: 0, update: 0 };
    let minimum = 0;
    let done = 0;
    const total = register.length + update.length;
    for (const target of targets) {
      const [sheetId, fieldId] = target.split(':').map(Number) as [number, number];
      for (const [route, all] of [['register', register], ['update', update]] as const) {
        const items = all.filter((r) => r.sheetId === sheetId && r.fieldId === fieldId).sort((a, b) => a.order - b.order);
        if (!items.length) continue;
        const limits = { maxItems: MAX_ATTACHMENTS_PER_REQUEST, overheadBytes: BODY_OVERHEAD };
        minimum += minimumBatches(items, itemBytes, limits);
        // Only each member's records keep their order (4.4 Sheets 7): members may be packed in any order.
        const batches = planGroupedBatches(items, itemBytes, (item) => item.code, limits);
        for (const batch of batches) {
          const before = stats.requests;
          const outcomes = await submitBatch(
            client,
            batch,
            messageNamesFile,
            (list) => client.transport.call(route === 'register' ? 'attachments.register' : 'attachments.update', {
              params: { sheet_id: sheetId, custom_field_id: fieldId },
              bodyStream: () => attachmentBody(list),
              dryRun: options.dryRun,
            }).then((answer) => ({ taskId: (answer as { task_id: number }).task_id })),
            stats,
          );
          sent[route] += stats.requests - before;
          for (const { item, ok, reason } of outcomes) {
            const what = route === 'register' ? 'added' : 'replaced the file of the same name';
            report.add({
              key: item.file.where, code: item.code, file_name: item.fileName, path: item.file.where, size: item.size,
              outcome: ok ? 'ok' : 'failed',
              reason: ok ? (options.dryRun ? `dry run: the service would accept it (${route})` : what) : reason,
            });
            done += 1;
          }
          options.onProgress?.({ stage: 'send', done, total });
        }
      }
    }
    report.finish();
    return { report, requests: { ...sent, minimum, resubmitted: stats.resubmitted }, waitedMs: client.transport.counters.waitedMs - waitedBefore, checkMs };
  } finally {
    await source.close();
  }
}
