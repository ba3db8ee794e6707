/**
 * The photo import (DESIGN.md sections 2, 5 and 8), a chain of named stages:
 *
 *   read → dedupe → route → check → normalize → batch → submit → report
 *
 * Names come first (no bytes): names off the extension list, two files for one member and unknown members are found before any
 * file is read, and each photo is routed to register (a member without a photo) or partial update
 * (a member with one) from one listing. Then the photos are checked (and converted where needed)
 * route by route, and a request leaves as soon as its batch is checked: the next batch is checked
 * while this one waits for the limit and is sent. Batches hold at most 100 photos and 250 MB, as
 * few as greedy batching gives each route; the run's first and last requests are its smallest.
 *
 * Safe to leave alone (section 8): with a journal, requests an earlier run left open are settled
 * first and photos whose bytes were already applied are skipped; a lost answer is resolved from
 * the listing; a stop signal ends the checking and sending at the next photo or request, and the
 * run returns with the files it reached.
 *
 * The plan is kept on disk, not as an object a photo (issue 46, photo-plan.ts): the names sorted by
 * member, merged with the listings kept sorted on disk, each route's photos in the order they are
 * sent, planned from their sizes in typed arrays, and the source read again for the photos as they
 * are checked (source-lookup.ts).
 */
import { rm } from 'node:fs/promises';
import type { WdsClient } from '../client/client.js';
import type { ImportSource } from '../sources/source.js';
import { stageOptions } from '../stages/registry.js';
import { closingOnError, readNames, refuse, reportGone } from '../stages/import/read.js';
import { PhotoRouting, codeFromName, listPhotos, type PhotoImportMode, type PhotoRoute } from '../stages/import/photo-route.js';
import { PhotoPlan } from '../stages/import/photo-plan.js';
import { PhotoCheckStage, normalizePhoto, type CheckedPhoto, type PhotoVerdict } from '../stages/import/check/photo-check-stage.js';
import { batchInLanes, type Batch } from '../stages/import/batch.js';
import { BATCHES_AHEAD, prefetch, drain } from '../stages/flow.js';
import { mentionsCode, type BatchOutcome, type SubmitOptions } from '../stages/import/submit.js';
import { PHOTO_BODY_OVERHEAD, photoBody, photoItemBytes } from '../stages/import/request-bodies.js';
import type { ItemReport, RunReport } from '../stages/report.js';
import type { ImportJournal } from '../stages/import/journal/journal.js';
import { appliedReason, appliedSince, settleEarlierRequests } from '../stages/import/journal/settle.js';
import { MAX_FILE_BYTES, MAX_PHOTOS_PER_REQUEST, UPDATE_REQUESTS_PER_MINUTE } from '../spec/limits.js';
import type { ImportTracker } from './import-progress.js';
import { ImportRun, type ImportResult, type ImportRunOptions } from './import-run.js';
import { makeTempDir } from '../util/temp-dir.js';

export type { PhotoImportMode } from '../stages/import/photo-route.js';
export { codeFromName } from '../stages/import/photo-route.js';

/** Options of {@link runPhotoImport}. */
export interface PhotoImportOptions extends ImportRunOptions {
  /** The photos: see {@link openSource}. Files are named `<member code>.<ext>` unless the source says the member. */
  source: ImportSource;
  /** `upsert` (default): a photo for each member, added or replaced; `register`: only members without one; `update`: only members with one. */
  mode?: PhotoImportMode;
  /** Let the service trim each photo to the face (the submit stage's `trim`). Default true. */
  trimming?: boolean;
  /** Convert what the service would refuse (HEIC, WebP, over 5 MB, ...): the normalize stage's `convert`. Default true. */
  normalize?: boolean;
  /**
   * Check every photo as a run would (names, members, bytes, conversion) and count the requests
   * its batches make, sending none: what `plan` says. The report's `ok` and `converted` items are
   * those a run would send. Default false.
   */
  checkOnly?: boolean;
  /** Photos checked and converted at once (the check stage's `concurrency`). Default 2. */
  concurrency?: number;
}

/** What a photo import did. */
export type PhotoImportResult = ImportResult;

/** A photo's size as far as it is known before its check: what the source says, and at most 5 MB once converted. */
const plannedBytes = (photo: { size: number }): number => Math.min(photo.size, MAX_FILE_BYTES);

/**
 * Imports members' photos as a chain of stages (see the top of this file). A file that cannot go
 * is reported with the reason, and the run goes on.
 */
export async function runPhotoImport(options: PhotoImportOptions): Promise<PhotoImportResult> {
  const { client, source, signal } = options;
  const where = 'photos import';
  // Options checked once, here, by the stages' own schemas; a bad one closes the source, as a run would.
  const [check, normalize, submit] = await closingOnError(source, () => [
    stageOptions('check', { concurrency: options.concurrency }, where),
    stageOptions('normalize', { convert: options.normalize }, where),
    stageOptions('submit', { trim: options.trimming, dry_run: options.dryRun }, where),
  ] as const);
  const mode = options.mode ?? 'upsert';
  const run = new ImportRun<CheckedPhoto, PhotoRoute>(where, options, submit.dry_run, (files) => Math.ceil(files / MAX_PHOTOS_PER_REQUEST));
  const { report, journal, tracker } = run;
  const temp = await makeTempDir('photos');
  const checks = new PhotoCheckStage(temp, { concurrency: check.concurrency, convert: normalize.convert, signal });
  const result = (): Promise<PhotoImportResult> => run.result(checks.ms, (file) => file.code ?? codeFromName(file.fileName));
  let batches: AsyncIterable<Batch<CheckedPhoto, PhotoRoute>> | undefined;
  const want = { kind: 'photo' as const };
  // The names on disk, sorted by member for routing, then each route's photos in the order they are sent.
  const plan = new PhotoPlan((photo) => photoItemBytes(photo.code, plannedBytes(photo)), PHOTO_LIMITS, updateWindow(client));
  let routing: PhotoRouting | undefined;
  let ended = false;
  try {
    // The service's side of routing and the checker's start need no names: both overlap the reading.
    await run.begin();
    checks.warmUp();
    const listed = listForRouting(client, mode, journal, signal);
    listed.catch(() => undefined);
    // A routing listed after the run ended (stopped while the names were read) lets go of its listings.
    listed.then((l) => {
      routing = l.routing;
      if (ended) routing.close();
    }, () => undefined);

    // read: every name and size, no bytes; a name off the extension list is refused here.
    const named = await readNames(source, want, report, (r) => r.code ?? (r.fileName === undefined ? '' : codeFromName(r.fileName)), signal,
      (file, order) => plan.add(file, order, report));
    run.read(named, { source, want });
    if (signal?.aborted) return await result();

    // route: a stop cuts the listings, and the run ends as stopped, having sent nothing.
    const listing = await listed.catch((error: unknown) => {
      if (signal?.aborted) return null;
      throw error;
    });
    if (!listing) return await result();
    ({ routing } = listing);
    report.notes.push(...listing.notes);
    // dedupe and route: one file per member, among the names a photo may have, each to its route.
    await plan.route(routing, report, (photo) => tracker.planned(photo.route!, plannedBytes(photo), photoItemBytes(photo.code, plannedBytes(photo))));
    await plan.planOrder();
    tracker.toCheck(plan.files);

    // check → normalize → batch: greedy in route order, each batch on its way as soon as it is
    // checked, the photos found again in the source as they come.
    const found = plan.found(source, want, checks.signal);
    const ready = sendable(checks.check(found), routing, report, tracker);
    batches = prefetch(batchInLanes(ready, (photo) => photo.route!, (photo) => photoItemBytes(photo.code, photo.size), PHOTO_LIMITS, plan.first), BATCHES_AHEAD);

    // submit: one request per batch, its task followed to the end.
    const routed = routing;
    await run.submit(batches, (route) => laneOptions(run, routed, route, submit), (route) => route, (outcome, route) => photoItem(run, outcome, route),
      'photo', (p) => ({ code: p.code, sha256: p.sha256 }));

    // report: what the listing shows for the photos applied, so that a rerun notices a later change by someone else.
    await run.noteApplied((each) => client.faceImages.each((p) => each(`photo:${p.code}`, p.updated_at)));
    return await result();
  } finally {
    ended = true;
    // After a failure the stages before submit end their work in hand before the temp folder goes.
    if (batches) await drain(batches);
    await checks.close();
    await rm(temp, { recursive: true, force: true });
    routing?.close();
    plan.close();
    run.close();
    await source.close();
  }
}

/** How the photos of one route are sent: as register or update requests of the face images. */
function laneOptions(run: ImportRun<CheckedPhoto, PhotoRoute>, routing: PhotoRouting, route: PhotoRoute, submit: { trim: boolean; dry_run: boolean }): SubmitOptions<CheckedPhoto> {
  const { client, signal } = run.options;
  return {
    names: (item, message) => mentionsCode(item.code, message),
    send: (items) => client.faceImages[route]({ stream: () => photoBody(items, submit.trim) }, { dryRun: submit.dry_run, stopBeforeSending: signal }),
    stats: run.stats,
    record: run.record('photo', route, (item) => routing.journalFile(item, item.sha256)),
    dryRun: submit.dry_run,
    // A dry run changes nothing, so the listing cannot tell what became of it.
    held: submit.dry_run ? undefined : async (items) => {
      const now = await listPhotos(client, undefined, items.map((item) => item.code));
      return items.map((item) => appliedSince('photo', routing.journalFile(item, item.sha256), now));
    },
    signal,
  };
}

/** What an earlier run left open is settled first, so that the listing routing reads is the truth. */
async function listForRouting(client: WdsClient, mode: PhotoImportMode, journal: ImportJournal | undefined, signal?: AbortSignal): Promise<{ routing: PhotoRouting; notes: string[] }> {
  const notes = journal ? await settleEarlierRequests(client, journal, 'photo', (files) => listPhotos(client, signal, files.map((f) => f.code)), signal) : [];
  return { routing: await PhotoRouting.list(client, mode, journal, signal), notes };
}

const PHOTO_LIMITS = { maxItems: MAX_PHOTOS_PER_REQUEST, overheadBytes: PHOTO_BODY_OVERHEAD };

/** Update requests in one window of the client's limit (the service's 5 when its limits are off). */
function updateWindow(client: WdsClient): number {
  const limits = client.options.limits;
  return limits ? limits.update.limit : UPDATE_REQUESTS_PER_MINUTE;
}

/**
 * Between normalize and batch: a photo the check refused is reported (one gone since the listing
 * is skipped), one whose bytes an earlier run applied is skipped, one the mode refuses is a
 * conflict; the rest go on to be batched.
 */
async function* sendable(verdicts: AsyncIterable<PhotoVerdict>, routing: PhotoRouting, report: RunReport, tracker: ImportTracker<PhotoRoute>): AsyncGenerator<CheckedPhoto> {
  for await (const verdict of verdicts) {
    const { photo } = verdict;
    const planned = { bytes: plannedBytes(photo), body: photoItemBytes(photo.code, plannedBytes(photo)) };
    const checked = normalizePhoto(verdict);
    if ('refused' in checked) {
      if (checked.gone) reportGone(report, photo, photo.code);
      else refuse(report, photo, photo.code, 'invalid', checked.refused);
      tracker.checked(photo.route, planned, null);
      continue;
    }
    const earlier = routing.appliedBefore(checked, checked.sha256);
    if (earlier) {
      const { file, code } = checked;
      report.add({
        key: file.where, code, file_name: file.fileName, path: file.where, size: checked.size, sha256: checked.sha256, outcome: 'skipped',
        reason: appliedReason(`to member ${code}`, earlier).replace('holds that file', 'holds that photo'),
      });
      tracker.checked(photo.route, planned, null);
      continue;
    }
    if (!checked.route) {
      refuse(report, photo, photo.code, 'conflict', photo.refusal!);
      tracker.checked(null, planned, null);
      continue;
    }
    tracker.checked(photo.route, planned, { bytes: checked.size, body: photoItemBytes(checked.code, checked.size) });
    yield checked;
  }
  tracker.allChecked();
}

function photoItem(run: ImportRun<CheckedPhoto, PhotoRoute>, outcome: BatchOutcome<CheckedPhoto>, route: PhotoRoute): ItemReport {
  const { item } = outcome;
  // Size and sha256 are the source file's, as every other item's: a converted photo's reason gives the JPEG's size.
  const done = outcome.outcome === 'ok' ? run.sentReason(route, route === 'register' ? 'registered' : 'updated (the earlier photo was replaced)', outcome.reason) : '';
  return {
    key: item.file.where, code: item.code, file_name: item.file.fileName, path: item.file.where, size: item.file.size, sha256: item.sha256,
    outcome: outcome.outcome !== 'ok' ? outcome.outcome : item.converted ? 'converted' : 'ok',
    reason: outcome.outcome !== 'ok' ? outcome.reason : item.converted ? `${item.converted}; ${done}` : done,
  };
}
