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
 */
import type { WdsClient } from '../client/client.js';
import type { ImportSource, SourceFile } from '../sources/source.js';
import { stageOptions } from '../stages/registry.js';
import { closingOnError, readNames, refuse, reportGone, reportUnreached } from '../stages/import/read.js';
import { AttachmentRouting, memberOfFile, type AttachmentImportMode, type AttachmentLane, type PlacedFile, type RoutedFile } from '../stages/import/attachment-route.js';
import { checkAttachmentFile, type AttachmentVerdict } from '../stages/import/check/attachment-check.js';
import { batchInLanes, fewestRequests, planGroupedBatches, type Batch } from '../stages/import/batch.js';
import { BATCHES_AHEAD, mapInOrder, prefetch, drain } from '../stages/flow.js';
import { countBatches, mentionsCode, submitBatches, type SubmitOptions, type SubmitStats } from '../stages/import/submit.js';
import { ATTACHMENT_BODY_OVERHEAD, attachmentBody, attachmentItemBytes } from '../stages/import/request-bodies.js';
import { targetOf, type ImportJournal, type JournalFile } from '../stages/import/journal/journal.js';
import { appliedSince, noteApplied, settleEarlierRequests } from '../stages/import/journal/settle.js';
import { RunReport, interruptedBy } from '../stages/report.js';
import { MAX_ATTACHMENTS_PER_REQUEST, MAX_FILE_BYTES } from '../spec/limits.js';
import { ImportTracker, type ImportProgress } from './import-progress.js';

export type { AttachmentImportMode } from '../stages/import/attachment-route.js';

/** Options of {@link runAttachmentImport}. */
export interface AttachmentImportOptions {
  /** The client to send with. */
  client: WdsClient;
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
  /** Send every request with `Dry-Run: 1`: all checks, no change (the submit stage's `dry_run`). Default false. */
  dryRun?: boolean;
  /**
   * Check every file as a run would (names, members, file parts, bytes) and count the requests its
   * batches make, sending none: what `plan` says. The report's `ok` items are those a run would
   * send. Default false.
   */
  checkOnly?: boolean;
  /**
   * Aborted by the CLI on SIGINT or SIGTERM (reason: the signal's name): nothing new is checked or
   * sent, the request in flight and its task are followed to their end, and the run returns with
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
  /** Files checked at once (the check stage's `concurrency`). Default 2. */
  concurrency?: number;
  /** How far the import is: see {@link ImportProgress}. */
  onProgress?: (progress: ImportProgress) => void;
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
  /** Wall time of the check stage, from the first file read to the last one checked, in milliseconds (it overlaps the sending). */
  checkMs: number;
  /** From the start of the run to the first request leaving, in milliseconds; null when none was sent. */
  firstRequestMs: number | null;
}

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
const plannedSize = (f: RoutedFile): number => Math.min(f.file.size, MAX_FILE_BYTES);

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
  // A dry run settles and skips by the journal as the real run would, so that it says what that
  // run will do, but keeps what it learns in memory: it writes nothing to the journal.
  const journal = submit.dry_run || options.checkOnly ? options.journal?.inMemoryOnly() : options.journal;
  const report = new RunReport(`attachments import${options.checkOnly ? ' (plan)' : submit.dry_run ? ' (dry run)' : ''}`);
  const started = Date.now();
  const waitedBefore = client.transport.counters.waitedMs;
  const stats: SubmitStats = { requests: 0, resubmitted: 0 };
  const sent = { register: 0, update: 0 };
  let firstRequestAt: number | undefined;
  let checkMs = 0;
  const tracker = new ImportTracker<string>((files, body) => fewestRequests(files, body, LIMITS), options.onProgress);
  let entries = 0;
  // Every file named, so that a stopped run's report still lists those it did not reach.
  let namedFiles: SourceFile[] = [];
  report.trackKeys();
  const result = (): AttachmentImportResult => {
    if (signal?.aborted) {
      report.interrupted = { signal: interruptedBy(signal), total: entries };
      reportUnreached(report, namedFiles, (file) => memberOfFile(file, { sheet: options.sheet, field: options.field }), signal);
    }
    report.finish();
    return {
      report,
      requests: { ...sent, minimum: tracker.minimum, resubmitted: stats.resubmitted },
      waitedMs: client.transport.counters.waitedMs - waitedBefore,
      checkMs,
      firstRequestMs: firstRequestAt === undefined ? null : firstRequestAt - started,
    };
  };
  const halt = new AbortController();
  const stop = (): void => halt.abort();
  signal?.addEventListener('abort', stop, { once: true });
  let batches: AsyncIterable<Batch<CheckedFile, string>> | undefined;
  try {
    // read: every name and size, no bytes.
    // From an export, the sheet and field say which of its files are restored.
    const given = { sheet: options.sheet, field: options.field };
    const named = await readNames(source, { kind: 'attachment', sheetId: options.sheet, fieldId: options.field }, report,
      (r) => (r.fileName === undefined ? r.code ?? '' : memberOfFile({ relPath: r.relPath, fileName: r.fileName, code: r.code }, given)), signal);
    entries = named.entries;
    namedFiles = named.files;
    if (signal?.aborted) return result();

    // dedupe and route: where each file goes, from the layouts and one listing of each file part.
    // A stop cuts these requests, and the run ends as stopped, having sent nothing.
    let routing: AttachmentRouting;
    let placed: PlacedFile[];
    try {
      routing = await AttachmentRouting.layouts(client, journal, signal);
      placed = routing.place(named.files, { sheet: options.sheet, field: options.field }, report);
      // What an earlier run left unsettled is settled first, so that the listings are the truth.
      if (journal) report.notes.push(...await settleEarlierRequests(client, journal, 'attachment', (files) => listFiles(client, files, signal), signal));
      await routing.list(placed, signal);
    } catch (error) {
      if (signal?.aborted) return result();
      throw error;
    }
    const routed = routing.route(placed, mode, report);
    const before = (item: CheckedFile): JournalFile => {
      const file = { ...routing.journalFile(item), sha256: item.sha256 };
      return { ...file, before: routing.listed.get(targetOf('attachment', file)) ?? null };
    };

    // The order the files are checked and batched in: lane by lane, each lane as its planned batches.
    const order = checkOrder(routed);
    tracker.toCheck(order.length);
    for (const f of order) if (f.lane) tracker.planned(laneKey(f.lane), plannedSize(f), bodyBytes(f, plannedSize(f)));

    // check → batch: each batch on its way as soon as it is checked.
    const checkStarted = Date.now();
    const verdicts = mapInOrder(order, async (file) => ({ file, verdict: await checkAttachmentFile(file.file) }), {
      concurrency: check.concurrency, window: check.concurrency * 8, signal: halt.signal,
    });
    const ready = sendable(verdicts, routing, report, tracker, () => (checkMs = Date.now() - checkStarted));
    batches = prefetch(batchInLanes(ready, (f) => laneKey(f.lane), (f) => attachmentItemBytes(f.code, f.fileName, f.size), LIMITS), BATCHES_AHEAD);

    // submit: one request per batch, its task followed to the end.
    const applied: CheckedFile[] = [];
    const laneOptions = (key: string): SubmitOptions<CheckedFile> => {
      const [sheetId, fieldId, route] = key.split(':') as [string, string, 'register' | 'update'];
      return {
        names: messageNamesFile,
        send: (list) => client.transport.call(route === 'register' ? 'attachments.register' : 'attachments.update', {
          params: { sheet_id: Number(sheetId), custom_field_id: Number(fieldId) },
          bodyStream: () => attachmentBody(list),
          dryRun: submit.dry_run,
          stopBeforeSending: signal,
        }).then((answer) => ({ taskId: (answer as { task_id: number }).task_id })),
        stats,
        record: journal && {
          sending: (items) => journal.sending('attachment', route, items.map(before)),
          task: (id, taskId) => journal.task(id, taskId),
          settled: (id, flags, how) => journal.settled(id, flags, how),
        },
        dryRun: submit.dry_run,
        // A dry run changes nothing, so the listing cannot tell what became of it.
        held: submit.dry_run ? undefined : async (list) => {
          const now = await listFiles(client, [{ sheet_id: Number(sheetId), custom_field_id: Number(fieldId) }]);
          return list.map((item) => appliedSince('attachment', before(item), now));
        },
        signal,
      };
    };
    await (options.checkOnly ? countBatches : submitBatches)(client, batches, laneOptions, {
      leaving: () => {
        firstRequestAt ??= Date.now();
        tracker.sending();
      },
      ended: (key, batch, outcomes, requests) => {
        const route = key.endsWith(':update') ? 'update' : 'register';
        sent[route] += requests;
        for (const { item, outcome, reason } of outcomes) {
          if (outcome === 'ok') applied.push(item);
          const what = route === 'register' ? 'added' : 'replaced the file of the same name';
          const ok = options.checkOnly ? `a run would send it (${route})` : submit.dry_run ? `dry run: the service would accept it (${route})` : reason ? `${what}, ${reason}` : what;
          report.add({
            key: item.file.where, code: item.code, file_name: item.fileName, path: item.file.where, size: item.size, sha256: item.sha256,
            outcome, reason: outcome === 'ok' ? ok : reason,
          });
        }
        tracker.sent(batch.length, batch.reduce((sum, item) => sum + item.size, 0), sent.register + sent.update);
      },
    }, signal);

    // report: what the listings show for the files applied, so that a rerun notices a later change by someone else.
    if (journal && applied.length && !options.checkOnly) {
      const files = applied.map((f) => ({ ...routing.journalFile(f), sha256: f.sha256 }));
      try {
        noteApplied(journal, 'attachment', files, await listFiles(client, files));
      } catch {
        // Without it, a rerun takes the files as listed then.
      }
    }
    return result();
  } finally {
    signal?.removeEventListener('abort', stop);
    halt.abort();
    // After a failure the checks under way end before the source is closed.
    if (batches) await drain(batches);
    await source.close();
  }
}

/**
 * Lane by lane (file part, then register before update, in the order the parts first come), each
 * lane in the order of its batches as planned from the files' sizes: only each member's records
 * keep their order (4.4 Sheets 7), so members may be packed across requests. Files that are sent
 * in no case, but whose bytes may make them a skip, come last.
 */
function checkOrder(routed: RoutedFile[]): RoutedFile[] {
  const lanes = new Map<string, RoutedFile[]>();
  for (const f of routed) {
    if (!f.lane) continue;
    const key = laneKey(f.lane);
    lanes.set(key, [...(lanes.get(key) ?? []), f]);
  }
  // A file part comes where its first file comes; within it, register before update.
  const partAt = new Map<string, number>();
  for (const f of routed) if (f.lane && !partAt.has(`${f.sheetId}:${f.fieldId}`)) partAt.set(`${f.sheetId}:${f.fieldId}`, f.order);
  const rank = (key: string): [number, number] => [partAt.get(key.slice(0, key.lastIndexOf(':')))!, key.endsWith(':register') ? 0 : 1];
  const keys = [...lanes.keys()].sort((a, b) => rank(a)[0] - rank(b)[0] || rank(a)[1] - rank(b)[1]);
  const ordered: RoutedFile[] = [];
  for (const key of keys) {
    const planned = planGroupedBatches(lanes.get(key)!, (f) => attachmentItemBytes(f.code, f.fileName, plannedSize(f)), (f) => f.code, LIMITS);
    for (const batch of planned) ordered.push(...batch);
  }
  return [...ordered, ...routed.filter((f) => !f.lane)];
}

/**
 * Between check and batch: a file the check refused is reported (one gone since the listing is
 * skipped), one whose bytes make it a skip is skipped, one the names already ruled out is a
 * conflict; the rest go on to be batched.
 */
async function* sendable(
  verdicts: AsyncIterable<{ file: RoutedFile; verdict: AttachmentVerdict }>, routing: AttachmentRouting, report: RunReport, tracker: ImportTracker<string>, ended: () => void,
): AsyncGenerator<CheckedFile> {
  for await (const { file, verdict } of verdicts) {
    const lane = file.lane ? laneKey(file.lane) : null;
    const planned = { bytes: plannedSize(file), body: bodyBytes(file, plannedSize(file)) };
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
    yield { ...file, lane: file.lane, size: verdict.size, sha256: verdict.sha256 };
  }
  ended();
  tracker.allChecked();
}

/** `updated_at` of each file of these file parts, keyed as the journal keys targets (the newest of a repeated name). */
async function listFiles(client: WdsClient, parts: { sheet_id?: number; custom_field_id?: number }[], signal?: AbortSignal): Promise<Map<string, string>> {
  const now = new Map<string, string>();
  for (const part of new Set(parts.map((p) => `${p.sheet_id}:${p.custom_field_id}`))) {
    const [sheetId, fieldId] = part.split(':').map(Number) as [number, number];
    for (const m of await client.attachments.list(sheetId, fieldId, { signal })) {
      for (const r of m.records) {
        const target = targetOf('attachment', { code: m.code, sheet_id: sheetId, custom_field_id: fieldId, file_name: r.file_name });
        const seen = now.get(target);
        if (seen === undefined || r.updated_at > seen) now.set(target, r.updated_at);
      }
    }
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
