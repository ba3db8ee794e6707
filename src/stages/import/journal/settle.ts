/**
 * What the imports do with the journal (DESIGN.md section 8): settle the requests an earlier run
 * left open (by their task, else by the listing), tell whether a file's bytes were already
 * applied, and note what the listing shows once files are applied.
 *
 * The listing's `updated_at` is service local time with no zone, so it is never compared with
 * this machine's clock: a file counts as applied by a request when the listing shows it with an
 * `updated_at` other than the one it showed before the request was sent (none, for a register).
 */
import type { WdsClient } from '../../../client/client.js';
import { isWdsError } from '../../../client/errors.js';
import { targetOf, type ImportJournal, type JournalFile, type JournalKind } from './journal.js';
import { awaitListing, LISTING_DELAYS_MS } from '../submit.js';

/**
 * A request sent this recently may still wait in the service's queue: its effect is awaited in
 * the listing as in the run that sent it, instead of read once.
 */
const RECENT_MS = 15 * 60_000;

/** `updated_at` of each target the listing shows now (targetOf keys); only the targets asked for need be there. */
export type Listing = (files: JournalFile[]) => Promise<Map<string, string>>;

/**
 * Whether the listing shows the file changed since the listing taken before its request was sent.
 * Timestamps have whole seconds: a replacement within the second of the file it replaced reads as
 * not applied.
 */
export function appliedSince(kind: JournalKind, file: JournalFile, now: Map<string, string>): boolean {
  const current = now.get(targetOf(kind, file));
  return current !== undefined && current !== file.before;
}

/**
 * Settles every request an earlier run left open: its task when it has one (waited for if still
 * queued), else the listing (awaited a while for a recent request, whose task may still be
 * queued). Answers notes for the report; a request that cannot be settled now (the service does
 * not answer, or the run is stopped meanwhile) stays open for the next run.
 */
export async function settleEarlierRequests(client: WdsClient, journal: ImportJournal, kind: JournalKind, listing: Listing, signal?: AbortSignal): Promise<string[]> {
  const notes: string[] = [];
  for (const request of journal.unsettled(kind)) {
    const what = `a request of ${request.files.length} file${request.files.length === 1 ? '' : 's'} sent by an earlier run at ${request.at}`;
    if (request.task_id !== undefined) {
      try {
        const task = await client.tasks.wait(request.task_id, { signal });
        await journal.settled(request.id, request.files.map(() => task.status === 'OK'), `task ${task.id} ended ${task.status}, read by a later run`);
        notes.push(`${what}: its task ${task.id} ended ${task.status}`);
        continue;
      } catch (error) {
        if (!isWdsError(error)) throw error;
        // The task is gone or unreadable: the listing tells instead.
      }
    }
    const held = async (files: JournalFile[]): Promise<boolean[]> => {
      const now = await listing(files);
      return files.map((file) => appliedSince(kind, file, now));
    };
    const recent = Date.now() - Date.parse(request.at) < RECENT_MS;
    const seen = await awaitListing(request.files, held, recent ? LISTING_DELAYS_MS : [0], signal);
    if (signal?.aborted || seen.some((h) => h === null)) {
      notes.push(`${what} is still unsettled: the listing could not be read`);
      continue;
    }
    const applied = seen.map((h) => h === true);
    const count = applied.filter(Boolean).length;
    await journal.settled(request.id, applied, 'by the listing, read by a later run');
    notes.push(`${what}${request.task_id !== undefined ? ` (task ${request.task_id})` : ''}: the listing shows ${count} of them applied`);
  }
  return notes;
}

/**
 * Whether these bytes are the last the journal knows applied at this target, and the listing
 * still shows that file as it was once applied (a change made since by anyone else means the
 * file is sent again). A file applied by a run that ended before it saw the listing is taken
 * as it is listed now: the task says only that it went in, not when, so a change made after it
 * cannot be told from it (`held` is then false), and sending the bytes again could undo that change.
 */
export function alreadyApplied(journal: ImportJournal, kind: JournalKind, file: Omit<JournalFile, 'before'>, now: Pick<Map<string, string>, 'get'>): { at: string; held: boolean } | null {
  const target = targetOf(kind, file);
  const known = journal.applied(target);
  const current = now.get(target);
  if (!known || known.sha256 !== file.sha256 || current === undefined) return null;
  if (known.updated_at === undefined) {
    // Only a help for the next run (it reads the listing again without it): not waited for, and
    // a line that cannot be written is let go.
    journal.seen(target, file.sha256, current).catch(() => undefined);
    return { at: known.at, held: false };
  }
  if (known.updated_at !== current) return null;
  return { at: known.at, held: true };
}

/** How a skip by {@link alreadyApplied} is said: what is known of the service's file, and no more. */
export function appliedReason(what: string, earlier: { at: string; held: boolean }): string {
  return earlier.held
    ? `these bytes were applied ${what} by an earlier run (${earlier.at}) and the service still holds that file; not sent again`
    : `these bytes were applied ${what} by an earlier run (${earlier.at}), which stopped before it saw the result listed; not sent again, so as not to undo a change made there since`;
}

/**
 * Notes what the listing shows for files applied in this run, so that a rerun can tell a later
 * change by someone else. Both sides come sorted by target (from temporary files: the applied
 * files and a listing of every file grow with the company) and are merged; the lines are written
 * SEEN_PER_WRITE files at a time. `listed` may give a target more than once (a repeated name):
 * the newest counts.
 */
export async function noteApplied(journal: ImportJournal, applied: AsyncIterable<[string, string]>, listed: AsyncIterable<[string, string]>): Promise<void> {
  const listing = listed[Symbol.asyncIterator]();
  let head = await listing.next();
  let seen: { target: string; sha256: string; updatedAt: string }[] = [];
  for await (const [target, sha256] of applied) {
    while (!head.done && head.value[0] < target) head = await listing.next();
    let current: string | undefined;
    while (!head.done && head.value[0] === target) {
      if (current === undefined || head.value[1] > current) current = head.value[1];
      head = await listing.next();
    }
    if (current === undefined) continue;
    seen.push({ target, sha256, updatedAt: current });
    if (seen.length < SEEN_PER_WRITE) continue;
    await journal.seenOwn(seen);
    seen = [];
  }
  await journal.seenOwn(seen);
}

/** Files whose `seen` lines noteApplied writes at once (a request's worth of attachments). */
const SEEN_PER_WRITE = 1000;
