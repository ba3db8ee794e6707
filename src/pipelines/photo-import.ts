/**
 * The photo import (issue 5; DESIGN.md section 5): every file of the source checked and, where
 * needed, converted before anything is sent; files mapped to members (`<code>.<ext>` or the
 * source's code); unknown codes and two files for one member reported without being sent; each
 * photo routed to register (member without a photo) or partial update (member with one) from one
 * listing; batches of at most 100 photos and 250 MB; every task followed to its end.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WdsClient } from '../client/client.js';
import type { ImportSource, SourceFile } from '../sources/source.js';
import { MAX_PHOTO_SOURCE_BYTES, PhotoChecker, type CheckVerdict } from '../stages/photo-checker.js';
import { planBatches, jsonStringBytes } from '../stages/batch.js';
import { mentionsCode, submitBatch, type SubmitStats } from '../stages/submit.js';
import { RunReport, type ItemReport } from '../stages/report.js';
import { base64Length, MAX_FILE_BYTES, MAX_PHOTOS_PER_REQUEST } from '../spec/limits.js';

export type PhotoImportMode = 'upsert' | 'register' | 'update';

export interface PhotoImportOptions {
  client: WdsClient;
  source: ImportSource;
  /** upsert (default): register or update per member; register or update only. */
  mode?: PhotoImportMode;
  /** The service's face trimming (`enable_trimming`). Default true. */
  trimming?: boolean;
  /** Convert what the service would refuse (HEIC, WebP, over 5 MB, ...). Default true. */
  normalize?: boolean;
  /** Send every request with `Dry-Run: 1`: all checks, no change. */
  dryRun?: boolean;
  /**
   * Aborted by the CLI on SIGINT or SIGTERM (reason: the signal's name): nothing new is sent, the
   * request in flight and its task are followed to their end, and the run returns with
   * `report.interrupted` set.
   */
  signal?: AbortSignal;
  /** Files checked and converted at once. Default 2. */
  concurrency?: number;
  /**
   * While checking, the files checked so far; once every file is checked, `total` (= `done`) is
   * the number ready to send; while sending, the files whose request has ended, of `total`.
   */
  onProgress?: (progress: { stage: 'check' | 'send'; done: number; total?: number }) => void;
}

interface ReadyPhoto {
  code: string;
  file: SourceFile;
  size: number;
  converted?: string;
  /** The converted bytes, kept on disk until sent so memory stays bounded. */
  tempPath?: string;
}

export interface PhotoImportResult {
  report: RunReport;
  requests: { register: number; update: number; minimum: number; resubmitted: number };
  waitedMs: number;
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

export async function runPhotoImport(options: PhotoImportOptions): Promise<PhotoImportResult> {
  const { client, source } = options;
  const mode = options.mode ?? 'upsert';
  const trimming = options.trimming ?? true;
  const report = new RunReport(`photos import${options.dryRun ? ' (dry run)' : ''}`);
  const temp = await mkdtemp(join(tmpdir(), 'wds-photos-'));
  // Image work runs in a process of its own, ended before the first request (photo-checker.ts).
  const checker = new PhotoChecker();
  const waitedBefore = client.transport.counters.waitedMs;
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
    const slots = Math.max(1, options.concurrency ?? 2);
    // One read buffer per file being checked, reused for the next (see READ_BUFFER_BYTES).
    const readBuffers: Buffer[] = [];
    for await (const entry of source.entries()) {
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
        const item: ReadyPhoto & { order: number } = { code, file, size: result.size, order: n };
        if (result.converted) {
          item.converted = result.converted;
          item.tempPath = output;
        }
        ready.push(item);
      })().finally(() => {
        running.delete(job);
        checked += 1;
        options.onProgress?.({ stage: 'check', done: checked });
      });
      running.add(job);
      if (running.size >= slots) await Promise.race(running);
    }
    await Promise.all(running);
    await checker.close();
    options.onProgress?.({ stage: 'check', done: ready.length, total: ready.length });
    ready.sort((a, b) => (a as ReadyPhoto & { order: number }).order - (b as ReadyPhoto & { order: number }).order);
    const checkMs = Date.now() - checkStarted;

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

    // 3. Route from one listing of members and one of current photos.
    const members = new Set((await client.members.list()).member_data.map((m) => m.code));
    const withPhoto = new Set((await client.faceImages.list()).map((p) => p.code));
    const register: ReadyPhoto[] = [];
    const update: ReadyPhoto[] = [];
    for (const item of single) {
      if (!members.has(item.code)) {
        reject(item.file, item.code, 'invalid', `no member has the code ${item.code} (taken from ${item.file.code ? 'the source' : 'the file name'})`);
      } else if (withPhoto.has(item.code)) {
        if (mode === 'register') reject(item.file, item.code, 'conflict', `member ${item.code} already has a photo; register is for members without one (use --mode update or upsert)`);
        else update.push(item);
      } else if (mode === 'update') {
        reject(item.file, item.code, 'conflict', `member ${item.code} has no photo; update replaces an existing one (use --mode register or upsert)`);
      } else {
        register.push(item);
      }
    }

    // 4. Fewest requests per route: 100 photos and 250 MB each.
    const stats: SubmitStats = { requests: 0, resubmitted: 0 };
    const sent = { register: 0, update: 0 };
    let done = 0;
    const total = register.length + update.length;
    for (const [route, items] of [['register', register], ['update', update]] as const) {
      const batches = planBatches(items, photoItemBytes, { maxItems: MAX_PHOTOS_PER_REQUEST, overheadBytes: PHOTO_BODY_OVERHEAD });
      for (const batch of batches) {
        const before = stats.requests;
        const outcomes = await submitBatch(
          client,
          batch,
          (item, message) => mentionsCode(item.code, message),
          (items) => client.transport.call(route === 'register' ? 'faceImages.register' : 'faceImages.update', {
            bodyStream: () => photoBody(items, trimming),
            dryRun: options.dryRun,
          }).then((answer) => ({ taskId: (answer as { task_id: number }).task_id })),
          stats,
        );
        sent[route] += stats.requests - before;
        for (const { item, ok, reason } of outcomes) {
          const what = route === 'register' ? 'registered' : 'updated (the earlier photo was replaced)';
          const doneReason = options.dryRun ? `dry run: the service would accept it (${route})` : what;
          report.add({
            key: item.file.where, code: item.code, file_name: item.file.fileName, path: item.file.where, size: item.size,
            outcome: ok ? (item.converted ? 'converted' : 'ok') : 'failed',
            reason: ok ? (item.converted ? `${item.converted}; ${doneReason}` : doneReason) : reason,
          });
          done += 1;
        }
        options.onProgress?.({ stage: 'send', done, total });
      }
    }
    report.finish();
    const minimum = Math.ceil(register.length / MAX_PHOTOS_PER_REQUEST) + Math.ceil(update.length / MAX_PHOTOS_PER_REQUEST);
    return {
      report,
      requests: { ...sent, minimum, resubmitted: stats.resubmitted },
      waitedMs: client.transport.counters.waitedMs - waitedBefore,
      checkMs,
    };
  } finally {
    await checker.close();
    await rm(temp, { recursive: true, force: true });
    await source.close();
  }
}
