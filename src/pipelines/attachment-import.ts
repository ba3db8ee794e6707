/**
 * The attachment import (issue 5; DESIGN.md section 5): every file checked before anything is sent
 * (extension, real type, 5 MB), its sheet and file part resolved (an export's manifest, the export
 * layout `attachments/<sheet>/<field>/<code>/<file>`, or `<code>/<file>` with --sheet --field),
 * the field confirmed as a file part from the layouts, duplicate names found within the source and
 * against the current listing, then register (add) or partial update (replace) requests of at most
 * 1,000 files and 250 MB of body each, base64 counted as 4/3, each member's records in source order.
 * With a journal, and on a stop signal, as the photo import (section 8).
 */
import type { ImportProgress } from './import-progress.js';
import { createHash } from 'node:crypto';
import type { WdsClient } from '../client/client.js';
import type { ImportSource, SourceFile } from '../sources/source.js';
import { checkAttachment, extensionProblem } from '../stages/attachment-check.js';
import { jsonStringBytes, minimumBatches, planGroupedBatches } from '../stages/batch.js';
import { mentionsCode, submitBatch, type RequestRecord, type SubmitStats } from '../stages/submit.js';
import { targetOf, type ImportJournal, type JournalFile } from '../stages/journal.js';
import { alreadyApplied, appliedSince, noteApplied, settleEarlierRequests } from '../stages/journal-settle.js';
import { RunReport, type ItemReport, interruptedBy } from '../stages/report.js';
import { HeldFiles } from '../stages/held-files.js';
import { base64Length, MAX_ATTACHMENTS_PER_REQUEST, MAX_FILE_BYTES } from '../spec/limits.js';

/** `upsert` replaces a file of the same name or adds it; `add` only adds, `replace` only replaces. */
export type AttachmentImportMode = 'upsert' | 'add' | 'replace';

/** Options of {@link runAttachmentImport}. */
export interface AttachmentImportOptions {
  /** The client to send with. */
  client: WdsClient;
  /** The files: see {@link openSource}. */
  source: ImportSource;
  /**
   * The sheet the files go to, for a source laid out `<member code>/<file>`. An export's manifest
   * or its layout `attachments/<sheet>/<field>/<code>/<file>` says it itself. Default: none.
   */
  sheet?: number;
  /** The file part of `sheet` the files go to (with `sheet`). Default: none. */
  field?: number;
  /** `upsert` (default): replace a file of the same name, else add; `add`: add only; `replace`: replace only. */
  mode?: AttachmentImportMode;
  /** Send every request with `Dry-Run: 1`: all checks, no change. Default false. */
  dryRun?: boolean;
  /**
   * Aborted by the CLI on SIGINT or SIGTERM (reason: the signal's name): nothing new is sent, the
   * request in flight and its task are followed to their end, and the run returns with
   * `report.interrupted` set.
   */
  signal?: AbortSignal;
  /**
   * Where each request is written before it is sent: requests an earlier
   * run left open are settled first, and files whose bytes the journal knows applied under their
   * name are skipped. Without one, a lost answer is still resolved from the listing in the run.
   * The CLI opens the company's journal ({@link ImportJournal.open}); a dry run never writes to it.
   * Default: none.
   */
  journal?: ImportJournal;
  /**
   * While checking, the files checked so far; once every file is checked, `total` (= `done`) is
   * the number ready to send; while sending, the files whose request has ended, of `total`.
   */
  onProgress?: (progress: ImportProgress) => void;
}

interface ReadyFile {
  file: SourceFile;
  code: string;
  fileName: string;
  sheetId: number;
  fieldId: number;
  size: number;
  sha256: string;
  order: number;
}

/** What an attachment import did. */
export interface AttachmentImportResult {
  /** Each file's outcome and why; `interrupted` when it was stopped. */
  report: RunReport;
  /**
   * Requests sent, by kind; `minimum`, the fewest the files needed under the service's limits;
   * `resubmitted`, files sent again after a task refused others of their request.
   */
  requests: {
    /** Register requests sent (files added). */
    register: number;
    /** Update requests sent (files replaced). */
    update: number;
    /** The fewest requests the files needed (100 photos or 1,000 files, and 250 MB, per request). */
    minimum: number;
    /** Files sent again after a task refused others of their request. */
    resubmitted: number;
  };
  /** Time spent waiting for the service's limits, Retry-After and retries, in milliseconds. */
  waitedMs: number;
  /** Time spent checking the files before the first request, in milliseconds. */
  checkMs: number;
}


/** A file as the journal knows it: where it goes and its bytes. */
const journalFile = (f: ReadyFile): Omit<JournalFile, 'before'> => ({
  code: f.code, sha256: f.sha256, sheet_id: f.sheetId, custom_field_id: f.fieldId, file_name: f.fileName,
});

/** `updated_at` of each file of these file parts, keyed as the journal keys targets (the newest of a repeated name). */
async function listFiles(client: WdsClient, parts: { sheet_id?: number; custom_field_id?: number }[]): Promise<Map<string, string>> {
  const now = new Map<string, string>();
  for (const part of new Set(parts.map((p) => `${p.sheet_id}:${p.custom_field_id}`))) {
    const [sheetId, fieldId] = part.split(':').map(Number) as [number, number];
    for (const m of await client.attachments.list(sheetId, fieldId)) {
      for (const r of m.records) {
        const target = targetOf('attachment', { code: m.code, sheet_id: sheetId, custom_field_id: fieldId, file_name: r.file_name });
        const seen = now.get(target);
        if (seen === undefined || r.updated_at > seen) now.set(target, r.updated_at);
      }
    }
  }
  return now;
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

/**
 * Imports files into the file parts of sheets: every file is checked (extension, real type,
 * 5 MB) and its sheet and file part confirmed before anything is sent, then sent in requests of
 * at most 1,000 files and 250 MB, each member's files in source order, and each request's task is
 * followed to its end. A file that cannot go is reported with the reason, and the run goes on.
 */
export async function runAttachmentImport(options: AttachmentImportOptions): Promise<AttachmentImportResult> {
  const { client, source, signal } = options;
  const mode = options.mode ?? 'upsert';
  // A dry run changes nothing: it neither settles nor skips by the journal, nor writes to it.
  const journal = options.dryRun ? undefined : options.journal;
  const report = new RunReport(`attachments import${options.dryRun ? ' (dry run)' : ''}`);
  const waitedBefore = client.transport.counters.waitedMs;
  const reject = (file: { where: string; fileName?: string; relPath: string }, code: string, outcome: ItemReport['outcome'], reason: string): void => {
    report.add({ key: file.where, code, file_name: file.fileName ?? file.relPath, outcome, reason, path: file.where });
  };
  const stats: SubmitStats = { requests: 0, resubmitted: 0 };
  const sent = { register: 0, update: 0 };
  let minimum = 0;
  let checkMs = 0;
  const result = (): AttachmentImportResult => {
    report.finish();
    return { report, requests: { ...sent, minimum, resubmitted: stats.resubmitted }, waitedMs: client.transport.counters.waitedMs - waitedBefore, checkMs };
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
    // Every entry of the source is counted, checked or not: the total of an interrupted run.
    let entries = 0;
    for await (const entry of source.entries()) {
      entries += 1;
      if (signal?.aborted) continue;
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
      const sha256 = createHash('sha256').update(data).digest('hex');
      ready.push({ file, code: place.code, fileName: file.fileName, sheetId: place.sheetId, fieldId: place.fieldId, size: data.length, sha256, order: order++ });
      options.onProgress?.({ stage: 'check', done: order });
    }
    checkMs = Date.now() - checkStarted;
    // Stopped while checking: the files checked are not sent, and not in the report.
    if (signal?.aborted) {
      report.interrupted = { signal: interruptedBy(signal), total: entries };
      return result();
    }
    options.onProgress?.({ stage: 'check', done: order, total: order });

    // 3. What an earlier run left unsettled is settled first, so that the listings are the truth.
    if (journal) report.notes.push(...await settleEarlierRequests(client, journal, 'attachment', (files) => listFiles(client, files), signal));

    // 4. Against the current listing of each file part involved, and against each other; bytes applied before are skipped.
    const members = new Set((await client.members.list()).member_data.map((m) => m.code));
    const targets = [...new Set(ready.map((r) => `${r.sheetId}:${r.fieldId}`))];
    const register: ReadyFile[] = [];
    const update: ReadyFile[] = [];
    // `updated_at` of every file of the parts involved, before anything is sent.
    const listed = new Map<string, string>();
    for (const target of targets) {
      const [sheetId, fieldId] = target.split(':').map(Number) as [number, number];
      const multi = fileParts.get(target)!.multi;
      const listing = await client.attachments.list(sheetId, fieldId);
      const held = new Map<string, string[]>();
      const heldFiles = new HeldFiles(new Map(listing.map((m) => [m.code, m.records])));
      for (const m of listing) {
        held.set(m.code, m.records.map((r) => r.file_name));
        for (const r of m.records) {
          const key = targetOf('attachment', { code: m.code, sheet_id: sheetId, custom_field_id: fieldId, file_name: r.file_name });
          if (!listed.has(key) || r.updated_at > listed.get(key)!) listed.set(key, r.updated_at);
        }
      }
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
        // Where the service cannot take this name (several records hold it, it comes twice, or
        // add mode), a file whose bytes it already holds under the name needs no request.
        const blocked = same > 1 || repeats > 1 || (same > 0 && mode === 'add');
        if (blocked && same > 0 && (await heldFiles.holdsSame(item.code, item.fileName, item.sha256))) {
          report.add({
            key: item.file.where, code: item.code, file_name: item.fileName, path: item.file.where, size: item.size, sha256: item.sha256, outcome: 'skipped',
            reason: `member ${item.code} already holds these bytes as "${item.fileName}" in ${where}; nothing to send`,
          });
          continue;
        }
        if (repeats > 1) {
          reject(item.file, item.code, 'conflict', `a second file named "${item.fileName}" for member ${item.code} in ${where}: the service refuses a name the member already holds in this file part, and cannot tell two files of one name apart to replace one`);
          continue;
        }
        const earlier = journal && same === 1 && alreadyApplied(journal, 'attachment', journalFile(item), listed);
        if (earlier) {
          report.add({
            key: item.file.where, code: item.code, file_name: item.fileName, path: item.file.where, size: item.size, sha256: item.sha256, outcome: 'skipped',
            reason: `these bytes were applied as "${item.fileName}" of member ${item.code} in ${where} by an earlier run (${earlier.at}) and the service still holds that file; not sent again`,
          });
          continue;
        }
        const wantsUpdate = mode === 'replace' || (mode === 'upsert' && same > 0);
        if (wantsUpdate) {
          if (same === 0) {
            reject(item.file, item.code, 'conflict', `member ${item.code} holds no file named "${item.fileName}" in ${where}; replace needs one (use --mode add or upsert)`);
          } else if (same > 1) {
            reject(item.file, item.code, 'conflict', `member ${item.code} holds ${same} records with a file named "${item.fileName}" in ${where}; the service cannot replace one of several files of the same name`);
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

    // 5. Fewest requests: per file part and route, 1,000 files and 250 MB of body each.
    const applied: ReadyFile[] = [];
    const before = (item: ReadyFile): JournalFile => ({ ...journalFile(item), before: listed.get(targetOf('attachment', journalFile(item))) ?? null });
    let done = 0;
    const total = register.length + update.length;
    const plans: { sheetId: number; fieldId: number; route: 'register' | 'update'; batches: ReadyFile[][] }[] = [];
    for (const target of targets) {
      const [sheetId, fieldId] = target.split(':').map(Number) as [number, number];
      for (const [route, all] of [['register', register], ['update', update]] as const) {
        const items = all.filter((r) => r.sheetId === sheetId && r.fieldId === fieldId).sort((a, b) => a.order - b.order);
        if (!items.length) continue;
        const limits = { maxItems: MAX_ATTACHMENTS_PER_REQUEST, overheadBytes: BODY_OVERHEAD };
        minimum += minimumBatches(items, itemBytes, limits);
        // Only each member's records keep their order (4.4 Sheets 7): members may be packed in any order.
        plans.push({ sheetId, fieldId, route, batches: planGroupedBatches(items, itemBytes, (item) => item.code, limits) });
      }
    }
    let sentBytes = 0;
    const totalBytes = [...register, ...update].reduce((sum, item) => sum + item.size, 0);
    options.onProgress?.({ stage: 'send', done, total, bytes: 0, totalBytes, requests: 0, minimum });
    sending: for (const { sheetId, fieldId, route, batches } of plans) {
      const record: RequestRecord<ReadyFile> | undefined = journal && {
        sending: (items) => journal.sending('attachment', route, items.map(before)),
        task: (id, taskId) => journal.task(id, taskId),
        settled: (id, flags, how) => journal.settled(id, flags, how),
      };
      for (const batch of batches) {
        // Stopped: the requests sent have ended; no new one starts.
        if (signal?.aborted) break sending;
        const requestsBefore = stats.requests;
        const outcomes = await submitBatch(client, batch, {
          names: messageNamesFile,
          send: (list) => client.transport.call(route === 'register' ? 'attachments.register' : 'attachments.update', {
            params: { sheet_id: sheetId, custom_field_id: fieldId },
            bodyStream: () => attachmentBody(list),
            dryRun: options.dryRun,
          }).then((answer) => ({ taskId: (answer as { task_id: number }).task_id })),
          stats,
          record,
          dryRun: options.dryRun,
          // A dry run changes nothing, so the listing cannot tell what became of it.
          held: options.dryRun ? undefined : async (list) => {
            const now = await listFiles(client, [{ sheet_id: sheetId, custom_field_id: fieldId }]);
            return list.map((item) => appliedSince('attachment', before(item), now));
          },
          signal,
        });
        sent[route] += stats.requests - requestsBefore;
        for (const { item, outcome, reason } of outcomes) {
          if (outcome === 'ok') applied.push(item);
          const what = route === 'register' ? 'added' : 'replaced the file of the same name';
          const ok = options.dryRun ? `dry run: the service would accept it (${route})` : reason ? `${what}, ${reason}` : what;
          report.add({
            key: item.file.where, code: item.code, file_name: item.fileName, path: item.file.where, size: item.size, sha256: item.sha256,
            outcome, reason: outcome === 'ok' ? ok : reason,
          });
          done += 1;
        }
        sentBytes += batch.reduce((sum, item) => sum + item.size, 0);
        options.onProgress?.({ stage: 'send', done, total, bytes: sentBytes, totalBytes, requests: sent.register + sent.update, minimum });
      }
    }
    if (signal?.aborted) report.interrupted = { signal: interruptedBy(signal), total: entries };

    // 6. What the listings show for the files applied, so that a rerun notices a later change by someone else.
    if (journal && applied.length) {
      try {
        noteApplied(journal, 'attachment', applied.map(journalFile), await listFiles(client, applied.map(journalFile)));
      } catch {
        // Without it, a rerun takes the files as listed then.
      }
    }
    return result();
  } finally {
    await source.close();
  }
}
