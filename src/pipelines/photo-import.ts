/**
 * The photo import (issue 5; DESIGN.md section 5): every file of the source checked and, where
 * needed, converted before anything is sent; files mapped to members (`<code>.<ext>` or the
 * source's code); unknown codes and two files for one member reported without being sent; each
 * photo routed to register (member without a photo) or partial update (member with one) from one
 * listing; batches of at most 100 photos and 250 MB; every task followed to its end.
 *
 * Safe to leave alone (section 8): with a journal, requests an earlier run left open are settled
 * first and photos already applied are skipped; a lost answer is resolved from the listing; a
 * stop signal ends the checking and sending at the next file or request, and the run returns with
 * the files it reached.
 */
import type { ImportProgress } from './import-progress.js';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WdsClient } from '../client/client.js';
import type { ImportSource, SourceFile } from '../sources/source.js';
import { MAX_PHOTO_SOURCE_BYTES, PhotoChecker, type CheckVerdict } from '../stages/photo-checker.js';
import { planBatches, jsonStringBytes } from '../stages/batch.js';
import { mentionsCode, submitBatch, type BatchOutcome, type RequestRecord, type SubmitStats } from '../stages/submit.js';
import { RunReport, type ItemReport, interruptedBy } from '../stages/report.js';
import type { ImportJournal, JournalFile } from '../stages/journal.js';
import { alreadyApplied, appliedSince, noteApplied, settleEarlierRequests } from '../stages/journal-settle.js';
import { base64Length, MAX_FILE_BYTES, MAX_PHOTOS_PER_REQUEST } from '../spec/limits.js';

/** `upsert` adds or replaces each member's photo; `register` only adds, `update` only replaces. */
export type PhotoImportMode = 'upsert' | 'register' | 'update';

/** Options of {@link runPhotoImport}. */
export interface PhotoImportOptions {
  /** The client to send with. */
  client: WdsClient;
  /** The photos: see {@link openSource}. Files are named `<member code>.<ext>` unless the source says the member. */
  source: ImportSource;
  /** `upsert` (default): a photo for each member, added or replaced; `register`: only members without one; `update`: only members with one. */
  mode?: PhotoImportMode;
  /** Let the service trim each photo to the face. Default true. */
  trimming?: boolean;
  /** Convert what the service would refuse (HEIC, WebP, over 5 MB, ...). Default true. */
  normalize?: boolean;
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
   * run left open are settled first, and photos whose bytes the journal knows applied to their
   * member are skipped. Without one, a lost answer is still resolved from the listing in the run.
   * The CLI opens the company's journal ({@link ImportJournal.open}); a dry run never writes to it.
   * Default: none.
   */
  journal?: ImportJournal;
  /** Files checked and converted at once. Default 2. */
  concurrency?: number;
  /**
   * While checking, the files checked so far; once every file is checked, `total` (= `done`) is
   * the number ready to send; while sending, the files whose request has ended, of `total`.
   */
  onProgress?: (progress: ImportProgress) => void;
}

interface ReadyPhoto {
  code: string;
  file: SourceFile;
  size: number;
  /** Of the file as the source holds it. */
  sha256: string;
  converted?: string;
  /** The converted bytes, kept on disk until sent so memory stays bounded. */
  tempPath?: string;
}

/** What a photo import did. */
export interface PhotoImportResult {
  /** Each file's outcome and why; `interrupted` when it was stopped. */
  report: RunReport;
  /**
   * Requests sent, by kind; `minimum`, the fewest the files needed under the service's limits;
   * `resubmitted`, files sent again after a task refused others of their request.
   */
  requests: {
    /** Register requests sent (photos of members without one). */
    register: number;
    /** Update requests sent (photos of members with one). */
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

/** `A0001.jpg` → `A0001`, at any folder depth. */
export function codeFromName(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/**
 * Files to check that are not on disk (zip entries) are read here and sent to the checker, through
 * buffers of this size kept for the run (larger ones into their own):
 * one buffer per file left to the garbage collector held some 25 MB of dead buffers at the peak
 * (bench/import; V8 frees them only at a full collection).
 */
const READ_BUFFER_BYTES = 8 * 1024 * 1024;

const PHOTO_BODY_OVERHEAD = Buffer.byteLength('{"enable_trimming":false,"member_data":[]}');
const photoItemBytes = (p: ReadyPhoto): number =>
  Buffer.byteLength('{"code":,"base64_face_image":""}') + jsonStringBytes(p.code) + base64Length(p.size);

/**
 * Base64 of a stream, one piece per chunk read (up to 2 bytes carried to the next, so that the
 * pieces join into one base64 text): never the whole photo as one string and one more buffer.
 */
async function* base64Pieces(stream: Readable): AsyncGenerator<Buffer> {
  let rest = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const data = rest.length ? Buffer.concat([rest, chunk]) : chunk;
    const whole = data.length - (data.length % 3);
    if (whole) yield Buffer.from(data.subarray(0, whole).toString('base64'));
    rest = Buffer.from(data.subarray(whole));
  }
  if (rest.length) yield Buffer.from(rest.toString('base64'));
}

async function* photoBody(items: ReadyPhoto[], trimming: boolean): AsyncGenerator<Buffer> {
  yield Buffer.from(`{"enable_trimming":${trimming},"member_data":[`);
  for (const [i, item] of items.entries()) {
    yield Buffer.from(`${i ? ',' : ''}{"code":${JSON.stringify(item.code)},"base64_face_image":"`);
    const stream = item.tempPath ? createReadStream(item.tempPath) : await item.file.open();
    let sent = 0;
    for await (const piece of base64Pieces(stream)) {
      // As read() did: a file grown past the limit since its check is not sent.
      sent += piece.length;
      if (sent > base64Length(MAX_FILE_BYTES)) throw new Error(`${item.file.where} is now over ${MAX_FILE_BYTES} bytes`);
      yield piece;
    }
    yield Buffer.from('"}');
  }
  yield Buffer.from(']}');
}


/** `updated_at` of every member's photo, keyed as the journal keys targets. */
async function listPhotos(client: WdsClient): Promise<Map<string, string>> {
  return new Map((await client.faceImages.list()).map((p) => [`photo:${p.code}`, p.updated_at]));
}

/**
 * Imports members' photos: every file is checked (and converted when the service would refuse
 * it) before anything is sent, then sent in requests of at most 100 photos and 250 MB, and each
 * request's task is followed to its end. A file that cannot go is reported with the reason, and
 * the run goes on.
 */
export async function runPhotoImport(options: PhotoImportOptions): Promise<PhotoImportResult> {
  const { client, source, signal } = options;
  const mode = options.mode ?? 'upsert';
  const trimming = options.trimming ?? true;
  // A dry run changes nothing: it neither settles nor skips by the journal, nor writes to it.
  const journal = options.dryRun ? undefined : options.journal;
  const report = new RunReport(`photos import${options.dryRun ? ' (dry run)' : ''}`);
  const temp = await mkdtemp(join(tmpdir(), 'wds-photos-'));
  // Image work runs in a process of its own, ended before the first request (photo-checker.ts).
  const checker = new PhotoChecker();
  const waitedBefore = client.transport.counters.waitedMs;
  const stats: SubmitStats = { requests: 0, resubmitted: 0 };
  const sent = { register: 0, update: 0 };
  let minimum = 0;
  let checkMs = 0;
  const result = (): PhotoImportResult => {
    report.finish();
    return { report, requests: { ...sent, minimum, resubmitted: stats.resubmitted }, waitedMs: client.transport.counters.waitedMs - waitedBefore, checkMs };
  };
  try {
    // 1. Check and convert every file, a few at a time, before anything is sent.
    const checkStarted = Date.now();
    const ready: ReadyPhoto[] = [];
    const reject = (file: { where: string; fileName?: string; relPath: string }, code: string, outcome: ItemReport['outcome'], reason: string): void => {
      report.add({ key: file.where, code, file_name: file.fileName ?? file.relPath, outcome, reason, path: file.where });
    };
    const running = new Set<Promise<void>>();
    let checked = 0;
    let index = 0;
    // Every entry of the source is counted, checked or not: the total of an interrupted run.
    let entries = 0;
    const slots = Math.max(1, options.concurrency ?? 2);
    // One read buffer per file being checked, reused for the next (see READ_BUFFER_BYTES).
    const readBuffers: Buffer[] = [];
    for await (const entry of source.entries()) {
      entries += 1;
      if (signal?.aborted) continue;
      if (entry.kind === 'refused') {
        reject(entry.refused, '', 'invalid', entry.refused.reason);
        continue;
      }
      const file = entry.file;
      const code = file.code ?? codeFromName(file.fileName);
      const n = index++;
      const job = (async () => {
        // A converted JPEG is written here by the checker and read back when sent.
        const output = join(temp, `${n}.jpg`);
        const checkOptions = { normalize: options.normalize ?? true, output };
        let result: CheckVerdict;
        if (file.diskPath) {
          result = await checker.check({ path: file.diskPath, size: file.size }, checkOptions);
        } else {
          const buffer = readBuffers.pop() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
          let data: Buffer;
          try {
            data = await file.read(MAX_PHOTO_SOURCE_BYTES, buffer);
          } catch (error) {
            readBuffers.push(buffer);
            reject(file, code, 'invalid', (error as Error).message);
            return;
          }
          // The check is done with `data` when it settles: the buffer can take the next file.
          result = await checker.check(data, checkOptions).finally(() => readBuffers.push(buffer));
        }
        if (!result.ok) {
          reject(file, code, 'invalid', result.reason);
          return;
        }
        const item: ReadyPhoto & { order: number } = { code, file, size: result.size, sha256: result.sha256, order: n };
        if (result.converted) {
          item.converted = result.converted;
          item.tempPath = output;
        }
        ready.push(item);
      })().catch((error: unknown) => {
        // A checker that failed once the run was stopped leaves this file unreached, not the run failed.
        if (!signal?.aborted) throw error;
      }).finally(() => {
        running.delete(job);
        checked += 1;
        options.onProgress?.({ stage: 'check', done: checked });
      });
      running.add(job);
      if (running.size >= slots) await Promise.race(running);
    }
    await Promise.all(running);
    await checker.close();
    checkMs = Date.now() - checkStarted;
    // Stopped while checking: the files checked are not sent, and not in the report.
    if (signal?.aborted) {
      report.interrupted = { signal: interruptedBy(signal), total: entries };
      return result();
    }
    options.onProgress?.({ stage: 'check', done: ready.length, total: ready.length });
    ready.sort((a, b) => (a as ReadyPhoto & { order: number }).order - (b as ReadyPhoto & { order: number }).order);

    // 2. One file per member: two files for one code are a conflict the user resolves.
    const byCode = new Map<string, ReadyPhoto[]>();
    for (const item of ready) byCode.set(item.code, [...(byCode.get(item.code) ?? []), item]);
    const single: ReadyPhoto[] = [];
    for (const [code, items] of byCode) {
      if (items.length === 1) {
        single.push(items[0]!);
        continue;
      }
      const names = items.map((i) => i.file.where).join(', ');
      for (const item of items) reject(item.file, code, 'conflict', `${items.length} files are for member ${code} (${names}); keep one`);
    }

    // 3. What an earlier run left unsettled is settled first, so that the listing is the truth.
    if (journal) report.notes.push(...await settleEarlierRequests(client, journal, 'photo', () => listPhotos(client), signal));

    // 4. Route from one listing of members and one of current photos; bytes applied before are skipped.
    const members = new Set((await client.members.list()).member_data.map((m) => m.code));
    const photos = await listPhotos(client);
    const register: ReadyPhoto[] = [];
    const update: ReadyPhoto[] = [];
    for (const item of single) {
      const earlier = journal && alreadyApplied(journal, 'photo', item, photos);
      if (!members.has(item.code)) {
        reject(item.file, item.code, 'invalid', `no member has the code ${item.code} (taken from ${item.file.code ? 'the source' : 'the file name'})`);
      } else if (earlier) {
        report.add({
          key: item.file.where, code: item.code, file_name: item.file.fileName, path: item.file.where, size: item.size, sha256: item.sha256, outcome: 'skipped',
          reason: `these bytes were applied to member ${item.code} by an earlier run (${earlier.at}) and the service still holds that photo; not sent again`,
        });
      } else if (photos.has(`photo:${item.code}`)) {
        if (mode === 'register') reject(item.file, item.code, 'conflict', `member ${item.code} already has a photo; register is for members without one (use --mode update or upsert)`);
        else update.push(item);
      } else if (mode === 'update') {
        reject(item.file, item.code, 'conflict', `member ${item.code} has no photo; update replaces an existing one (use --mode register or upsert)`);
      } else {
        register.push(item);
      }
    }

    // 5. Fewest requests per route: 100 photos and 250 MB each.
    const applied: ReadyPhoto[] = [];
    let done = 0;
    const total = register.length + update.length;
    const plans = ([['register', register], ['update', update]] as const).map(([route, items]) => ({
      route, batches: planBatches(items, photoItemBytes, { maxItems: MAX_PHOTOS_PER_REQUEST, overheadBytes: PHOTO_BODY_OVERHEAD }),
    }));
    minimum = Math.ceil(register.length / MAX_PHOTOS_PER_REQUEST) + Math.ceil(update.length / MAX_PHOTOS_PER_REQUEST);
    const before = (item: ReadyPhoto): JournalFile => ({ code: item.code, sha256: item.sha256, before: photos.get(`photo:${item.code}`) ?? null });
    let sentBytes = 0;
    const totalBytes = [...register, ...update].reduce((sum, item) => sum + item.size, 0);
    options.onProgress?.({ stage: 'send', done, total, bytes: 0, totalBytes, requests: 0, minimum });
    sending: for (const { route, batches } of plans) {
      const record: RequestRecord<ReadyPhoto> | undefined = journal && {
        sending: (items) => journal.sending('photo', route, items.map(before)),
        task: (id, taskId) => journal.task(id, taskId),
        settled: (id, flags, how) => journal.settled(id, flags, how),
      };
      for (const batch of batches) {
        // Stopped: the requests sent have ended; no new one starts.
        if (signal?.aborted) break sending;
        const requestsBefore = stats.requests;
        const outcomes = await submitBatch(client, batch, {
          names: (item, message) => mentionsCode(item.code, message),
          send: (items) => client.transport.call(route === 'register' ? 'faceImages.register' : 'faceImages.update', {
            bodyStream: () => photoBody(items, trimming),
            dryRun: options.dryRun,
          }).then((answer) => ({ taskId: (answer as { task_id: number }).task_id })),
          stats,
          record,
          dryRun: options.dryRun,
          // A dry run changes nothing, so the listing cannot tell what became of it.
          held: options.dryRun ? undefined : async (items) => {
            const now = await listPhotos(client);
            return items.map((item) => appliedSince('photo', before(item), now));
          },
          signal,
        });
        sent[route] += stats.requests - requestsBefore;
        for (const outcome of outcomes) {
          if (outcome.outcome === 'ok') applied.push(outcome.item);
          report.add(photoItem(outcome, route, options.dryRun ?? false));
          done += 1;
        }
        sentBytes += batch.reduce((sum, item) => sum + item.size, 0);
        options.onProgress?.({ stage: 'send', done, total, bytes: sentBytes, totalBytes, requests: sent.register + sent.update, minimum });
      }
    }
    if (signal?.aborted) report.interrupted = { signal: interruptedBy(signal), total: entries };

    // 6. What the listing shows for the photos applied, so that a rerun notices a later change by someone else.
    if (journal && applied.length) {
      try {
        noteApplied(journal, 'photo', applied, await listPhotos(client));
      } catch {
        // Without it, a rerun takes the photo as listed then.
      }
    }
    return result();
  } finally {
    await checker.close();
    await rm(temp, { recursive: true, force: true });
    await source.close();
  }
}

function photoItem(outcome: BatchOutcome<ReadyPhoto>, route: 'register' | 'update', dryRun: boolean): ItemReport {
  const { item } = outcome;
  const base = { key: item.file.where, code: item.code, file_name: item.file.fileName, path: item.file.where, size: item.size, sha256: item.sha256 };
  if (outcome.outcome !== 'ok') return { ...base, outcome: outcome.outcome, reason: outcome.reason };
  const what = route === 'register' ? 'registered' : 'updated (the earlier photo was replaced)';
  const done = dryRun ? `dry run: the service would accept it (${route})` : outcome.reason ? `${what}, ${outcome.reason}` : what;
  return { ...base, outcome: item.converted ? 'converted' : 'ok', reason: item.converted ? `${item.converted}; ${done}` : done };
}
