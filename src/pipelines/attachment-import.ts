/**
 * The attachment import (DESIGN.md sections 2, 5 and 8), a chain of named stages:
 *
 *   read → dedupe → route → check → batch → submit → report
 *
 * (normalize has nothing to do for attachments: files are sent as they are.) Names come first:
 * each file's sheet and file part (an export's manifest, the export layout
 * `attachments/<sheet>/<field>/<code>/<file>`, or `<code>/<file>` with a sheet and field), unknown
 * members, a name twice for one member, and add (register) or replace (update) from the listing of
 * each file part, all before any file is read. The batches are planned from the files' sizes (at
 * most 1,000 files and 250 MB of body each, base64 counted as 4/3, each member's records in source
 * order); then the files are checked in that order (extension, real type, 5 MB), and a request
 * leaves as soon as its batch is checked, greedy in that order so a file refused at its check
 * simply leaves its batch. With a journal, and on a stop signal, as the photo import (section 8).
 *
 * The plan is kept on disk, not as an object a file (issue 46, attachment-plan.ts): the names
 * sorted by file part, member and name, each lane's files in their planned order, and the source
 * read again for the files as they are checked (source-lookup.ts).
 */
import type { WdsClient } from '../client/client.js';
import type { ImportSource } from '../sources/source.js';
import { stageOptions } from '../stages/registry.js';
import { closingOnError, readNames, refuse, reportGone } from '../stages/import/read.js';
import { AttachmentRouting, memberOfFile, type AttachmentImportMode, type AttachmentLane, type RoutedFile, type RoutedRecord } from '../stages/import/attachment-route.js';
import { AttachmentPlan } from '../stages/import/attachment-plan.js';
import { SourceLookup } from '../stages/import/source-lookup.js';
import { checkAttachmentFile, type AttachmentVerdict } from '../stages/import/check/attachment-check.js';
import { batchInLanes, fewestRequests, type Batch } from '../stages/import/batch.js';
import { BATCHES_AHEAD, prefetch, drain } from '../stages/flow.js';
import { mapInOrder } from '../util/map-in-order.js';
import { mentionsCode, type BatchOutcome, type SubmitOptions } from '../stages/import/submit.js';
import { ATTACHMENT_BODY_OVERHEAD, attachmentBody, attachmentItemBytes } from '../stages/import/request-bodies.js';
import { targetOf, type JournalFile } from '../stages/import/journal/journal.js';
import { appliedSince, settleEarlierRequests } from '../stages/import/journal/settle.js';
import type { ItemReport, RunReport } from '../stages/report.js';
import { MAX_ATTACHMENTS_PER_REQUEST, MAX_FILE_BYTES } from '../spec/limits.js';
import type { ImportTracker } from './import-progress.js';
import { ImportRun, type ImportResult, type ImportRoute, type ImportRunOptions } from './import-run.js';

export type { AttachmentImportMode } from '../stages/import/attachment-route.js';

/** Options of {@link runAttachmentImport}. */
export interface AttachmentImportOptions extends ImportRunOptions {
  /** The files: see {@link openSource}. */
  source: ImportSource;
  /**
   * The sheet the files go to, for a source laid out `<member code>/<file>`. An export's manifest
   * or its layout `attachments/<sheet>/<field>/<code>/<file>` says it itself; from an export, only
   * the files of this sheet are restored (none is an error). Default: none (an export's every sheet).
   */
  sheet?: number;
  /** The file part of `sheet` the files go to (with `sheet`); from an export, only its files are restored. Default: none. */
  field?: number;
  /** `upsert` (default): replace a file of the same name, else add; `add`: add only; `replace`: replace only. */
  mode?: AttachmentImportMode;
  /**
   * Check every file as a run would (names, members, file parts, bytes) and count the requests its
   * batches make, sending none: what `plan` says. The report's `ok` items are those a run would
   * send. Default false.
   */
  checkOnly?: boolean;
  /** Files checked at once (the check stage's `concurrency`). Default 2. */
  concurrency?: number;
}

/** What an attachment import did. */
export type AttachmentImportResult = ImportResult;

/** A file that passed its check, ready to batch. */
interface CheckedFile extends RoutedFile {
  lane: AttachmentLane;
  size: number;
  sha256: string;
}

const LIMITS = { maxItems: MAX_ATTACHMENTS_PER_REQUEST, overheadBytes: ATTACHMENT_BODY_OVERHEAD };
const laneKey = (lane: AttachmentLane): string => `${lane.sheetId}:${lane.fieldId}:${lane.route}`;
const bodyBytes = (f: { code: string; fileName: string }, size: number): number => attachmentItemBytes(f.code, f.fileName, size) + 1;
/** A file's size before its check, as the source says it (an attachment is never converted). */
const plannedSize = (f: { size: number }): number => Math.min(f.size, MAX_FILE_BYTES);

/**
 * Imports files into the file parts of sheets as a chain of stages (see the top of this file).
 * A file that cannot go is reported with the reason, and the run goes on.
 */
export async function runAttachmentImport(options: AttachmentImportOptions): Promise<AttachmentImportResult> {
  const { client, source, signal } = options;
  const where = 'attachments import';
  // Options checked once, here, by the stages' own schemas; a bad one closes the source, as a run would.
  const [check, submit] = await closingOnError(source, () => [
    stageOptions('check', { concurrency: options.concurrency }, where),
    stageOptions('submit', { dry_run: options.dryRun }, where),
  ] as const);
  const mode = options.mode ?? 'upsert';
  const run = new ImportRun<CheckedFile, string>(where, options, submit.dry_run, (files, body) => fewestRequests(files, body, LIMITS));
  const { report, tracker } = run;
  let checkMs = 0;
  // From an export, the sheet and field say which of its files are restored.
  const given = { sheet: options.sheet, field: options.field };
  const result = (): Promise<AttachmentImportResult> => run.result(checkMs, (file) => memberOfFile(file, given));
  const halt = new AbortController();
  const stop = (): void => halt.abort();
  signal?.addEventListener('abort', stop, { once: true });
  let batches: AsyncIterable<Batch<CheckedFile, string>> | undefined;
  let routing: AttachmentRouting | null = null;
  const want = { kind: 'attachment' as const, sheetId: options.sheet, fieldId: options.field };
  // The names on disk, sorted for routing, then each lane's files in their planned order.
  const plan = new AttachmentPlan(given, (f) => attachmentItemBytes(f.code, f.fileName, plannedSize(f)), LIMITS);
  try {
    await run.begin();
    // read: every name and size, no bytes.
    const named = await readNames(source, want, report,
      (r) => (r.fileName === undefined ? r.code ?? '' : memberOfFile({ relPath: r.relPath, fileName: r.fileName, code: r.code }, given)), signal,
      (file, order) => plan.add(file, order, report));
    run.read(named, { source, want });
    if (signal?.aborted) return await result();

    // dedupe and route: where each file goes, from the layouts and one listing of each file part.
    // A stop cuts these requests, and the run ends as stopped, having sent nothing.
    routing = await planFiles(run, plan, mode);
    if (!routing) return await result();
    const routed = routing;
    tracker.toCheck(plan.files);

    // check → batch: each batch on its way as soon as it is checked, the files found again in the source as they come.
    const checkStarted = Date.now();
    const found = new SourceLookup(source, want).files(plan.order(), halt.signal);
    const verdicts = mapInOrder(found, async ({ item, file }) => ({ record: item, file: file && routed.routedFile(item, file), verdict: file ? await checkAttachmentFile(file) : null }), {
      concurrency: check.concurrency, window: check.concurrency * 8, signal: halt.signal,
    });
    const ready = sendable(verdicts, routing, report, tracker, () => (checkMs = Date.now() - checkStarted));
    batches = prefetch(batchInLanes(ready, (f) => laneKey(f.lane), (f) => attachmentItemBytes(f.code, f.fileName, f.size), LIMITS), BATCHES_AHEAD);

    // submit: one request per batch, its task followed to the end.
    const routeOf = (key: string): ImportRoute => (key.endsWith(':update') ? 'update' : 'register');
    await run.submit(batches, (key) => laneOptions(run, key, submit.dry_run), routeOf, (outcome, route) => fileItem(run, outcome, route),
      'attachment', (f) => ({ code: f.code, sheet_id: f.sheetId, custom_field_id: f.fieldId, file_name: f.fileName, sha256: f.sha256 }));

    // report: what the listings show for the files applied, so that a rerun notices a later change by someone else.
    await run.noteApplied((each) => eachListed(client, plan.parts, each));
    return await result();
  } finally {
    signal?.removeEventListener('abort', stop);
    halt.abort();
    // After a failure the checks under way end before the source is closed.
    if (batches) await drain(batches);
    plan.close();
    await routing?.close();
    run.close();
    await source.close();
  }
}

/**
 * Where each file goes, from the layouts and one listing of each file part; what an earlier run
 * left unsettled is settled first, so that the listings are the truth. Null when a stop cut these
 * requests: the run ends as stopped, having sent nothing.
 */
async function planFiles(run: ImportRun<CheckedFile, string>, plan: AttachmentPlan, mode: AttachmentImportMode): Promise<AttachmentRouting | null> {
  const { client, signal } = run.options;
  const { journal, report, tracker } = run;
  let routing: AttachmentRouting | undefined;
  try {
    routing = await AttachmentRouting.layouts(client, journal, signal);
    if (journal) report.notes.push(...await settleEarlierRequests(client, journal, 'attachment', (listed) => listFiles(client, listed, signal), signal));
    await routing.list(plan.parts, signal);
    await plan.route(routing, mode, report, (f, lane) => tracker.planned(lane, plannedSize(f), bodyBytes(f, plannedSize(f))));
    return routing;
  } catch (error) {
    await routing?.close();
    if (signal?.aborted) return null;
    throw error;
  }
}

/** A file's journal entry, with what its target held before the run (from the listing). */
function journalEntry(item: CheckedFile): JournalFile {
  return { code: item.code, sheet_id: item.sheetId, custom_field_id: item.fieldId, file_name: item.fileName, sha256: item.sha256, before: item.before };
}

/** How the files of one lane (`sheet:field:route`) are sent: as register or update requests of the file part. */
function laneOptions(run: ImportRun<CheckedFile, string>, key: string, dryRun: boolean): SubmitOptions<CheckedFile> {
  const { client, signal } = run.options;
  const [sheetId, fieldId, route] = key.split(':') as [string, string, ImportRoute];
  return {
    names: messageNamesFile,
    send: (list) => client.attachments[route](Number(sheetId), Number(fieldId), { stream: () => attachmentBody(list) }, { dryRun, stopBeforeSending: signal }),
    stats: run.stats,
    record: run.record('attachment', route, journalEntry),
    dryRun,
    // A dry run changes nothing, so the listing cannot tell what became of it.
    held: dryRun ? undefined : async (list) => {
      const files = list.map(journalEntry);
      const now = await listFiles(client, files);
      return files.map((file) => appliedSince('attachment', file, now));
    },
    signal,
  };
}

function fileItem(run: ImportRun<CheckedFile, string>, { item, outcome, reason }: BatchOutcome<CheckedFile>, route: ImportRoute): ItemReport {
  const ok = run.sentReason(route, route === 'register' ? 'added' : 'replaced the file of the same name', reason);
  return {
    key: item.file.where, code: item.code, file_name: item.fileName, path: item.file.where, size: item.size, sha256: item.sha256,
    outcome, reason: outcome === 'ok' ? ok : reason,
  };
}

/**
 * Between check and batch: a file the check refused is reported (one gone since the listing is
 * skipped), one whose bytes make it a skip is skipped, one the names already ruled out is a
 * conflict; the rest go on to be batched.
 */
async function* sendable(
  verdicts: AsyncIterable<{ record: RoutedRecord; file: RoutedFile | null; verdict: AttachmentVerdict | null }>, routing: AttachmentRouting, report: RunReport,
  tracker: ImportTracker<string>, ended: () => void,
): AsyncGenerator<CheckedFile> {
  for await (const { record, file, verdict } of verdicts) {
    const lane = record.route ? `${record.sheetId}:${record.fieldId}:${record.route}` : null;
    const planned = { bytes: plannedSize(record), body: bodyBytes(record, plannedSize(record)) };
    if (!file || !verdict) {
      // No longer in the source when it was read again: as a file deleted before its check.
      reportGone(report, { where: record.where, fileName: record.fileName }, record.code);
      tracker.checked(lane, planned, null);
      continue;
    }
    if (!verdict.ok) {
      if (verdict.gone) reportGone(report, { where: file.file.where, fileName: file.file.fileName }, file.code);
      else refuse(report, file.file, file.code, 'invalid', verdict.reason);
      tracker.checked(lane, planned, null);
      continue;
    }
    const skip = await routing.skipReason(file, verdict.sha256);
    if (skip) {
      report.add({ key: file.file.where, code: file.code, file_name: file.fileName, path: file.file.where, size: verdict.size, sha256: verdict.sha256, outcome: 'skipped', reason: skip });
      tracker.checked(lane, planned, null);
      continue;
    }
    if (!file.lane) {
      refuse(report, file.file, file.code, 'conflict', file.refusal!);
      tracker.checked(null, planned, null);
      continue;
    }
    tracker.checked(lane, planned, { bytes: verdict.size, body: bodyBytes(file, verdict.size) });
    yield {
      file: file.file, code: file.code, fileName: file.fileName, sheetId: file.sheetId, fieldId: file.fieldId, order: file.order,
      lane: file.lane, refusal: file.refusal, skipIfHeld: file.skipIfHeld, skipIfApplied: file.skipIfApplied, before: file.before, held: undefined, heldShared: false,
      size: verdict.size, sha256: verdict.sha256,
    };
  }
  ended();
  tracker.allChecked();
}

/** Each file of these file parts (`sheet:field`) as the journal keys it, with its `updated_at`, handed to `each`. */
async function eachListed(client: WdsClient, parts: Iterable<string>, each: (target: string, updatedAt: string) => void): Promise<void> {
  for (const part of parts) {
    const [sheetId, fieldId] = part.split(':').map(Number) as [number, number];
    // Read entry by entry: the answer's download URLs are not needed here, nor held.
    await client.attachments.each(sheetId, fieldId, (m) => {
      for (const r of m.records) each(targetOf('attachment', { code: m.code, sheet_id: sheetId, custom_field_id: fieldId, file_name: r.file_name }), r.updated_at);
    });
  }
}

/** `updated_at` of each of `files` that the listings of their file parts show, keyed as the journal keys targets; the others are not kept. */
async function listFiles(client: WdsClient, files: Pick<JournalFile, 'code' | 'sheet_id' | 'custom_field_id' | 'file_name'>[], signal?: AbortSignal): Promise<Map<string, string>> {
  const wanted = new Set(files.map((file) => targetOf('attachment', file)));
  const now = new Map<string, string>();
  for (const part of new Set(files.map((p) => `${p.sheet_id}:${p.custom_field_id}`))) {
    const [sheetId, fieldId] = part.split(':').map(Number) as [number, number];
    // Read entry by entry: the answer's download URLs are not needed here, nor held.
    await client.attachments.each(sheetId, fieldId, (m) => {
      for (const r of m.records) {
        const target = targetOf('attachment', { code: m.code, sheet_id: sheetId, custom_field_id: fieldId, file_name: r.file_name });
        if (!wanted.has(target)) continue;
        const seen = now.get(target);
        if (seen === undefined || r.updated_at > seen) now.set(target, r.updated_at);
      }
    }, { signal });
  }
  return now;
}

/**
 * Whether a task message is about this file: it names the member, and this file among the member's
 * files of the batch, or none of them (then it is about the member, so every file of it). Names
 * are matched in quotes first, then as text where the longest wins, so that "3.pdf" is not
 * blamed for a message about "new-3.pdf".
 */
function messageNamesFile(item: CheckedFile, message: string, batch: CheckedFile[]): boolean {
  if (!mentionsCode(item.code, message)) return false;
  const own = [...new Set(batch.filter((o) => o.code === item.code).map((o) => o.fileName))];
  const quoted = own.filter((n) => message.includes(JSON.stringify(n)) || message.includes(`"${n}"`));
  if (quoted.length) return quoted.includes(item.fileName);
  const found = own.filter((n) => message.includes(n));
  if (!found.length) return true;
  return found.includes(item.fileName) && !found.some((n) => n !== item.fileName && n.includes(item.fileName));
}
