/**
 * Submits a batch as one update request and follows its task to the end (DESIGN.md sections 5
 * and 8): `OK` settles every item; `NG` attaches each message to the items it names (by member
 * code) and sends the items it does not name once more in a request of their own, because an NG
 * task changes nothing and they were refused only for their neighbours; `ERROR` fails the items a
 * fresh listing does not show held.
 * A lost answer, or a task whose end cannot be read, is never sent again blind: what the service
 * holds is read from a fresh listing and each item is reported by it.
 */
import type { WdsClient } from '../../client/client.js';
import { isWdsError, RequestBodyError, type FinalTask } from '../../client/errors.js';
import type { TaskRef } from '../../client/resources/common.js';
import { sleep } from '../../client/retry.js';

export interface BatchOutcome<T> {
  item: T;
  outcome: 'ok' | 'failed' | 'unknown';
  /** Why it failed or is unknown; for an ok item, how it is known when that is not the task. */
  reason?: string;
}

export interface SubmitStats {
  requests: number;
  resubmitted: number;
}

/** Where each request is written down before it is sent, and what became of it (the journal). */
export interface RequestRecord<T> {
  /** Resolves once the request is written down; only then is it sent. */
  sending(items: T[]): Promise<string>;
  task(id: string, taskId: number): Promise<void>;
  /** Which items the service applied; `how` says how that is known. */
  settled(id: string, applied: boolean[], how: string): Promise<void>;
}

/** Whether the service holds each item now (true), does not (false), or cannot tell (null). */
export type HeldCheck<T> = (items: T[]) => Promise<(boolean | null)[]>;

export interface SubmitOptions<T> {
  /** Whether a task message is about this item (by its member code, and its file name if need be). */
  names: (item: T, message: string, batch: T[]) => boolean;
  /**
   * Sends one request. It should pass `signal` as the call's `stopBeforeSending`, so that a request
   * still waiting for the limits when the run is stopped is not sent: its items are then left out
   * of the outcomes, as files the run did not reach.
   */
  send: (items: T[]) => Promise<TaskRef>;
  stats: SubmitStats;
  /** Read from a fresh listing when an answer is lost; without it, such items are unknown. */
  held?: HeldCheck<T>;
  /** Requests sent with Dry-Run: 1, which change nothing, so no listing can tell what became of them. */
  dryRun?: boolean;
  record?: RequestRecord<T>;
  /**
   * The run's stop signal: a request still waiting to leave is not sent (see `send`), and the wait
   * for a lost answer's effect in the listing is cut short; a request on its way and its task are
   * followed to their end.
   */
  signal?: AbortSignal;
  /** Pauses (ms) before each listing while a lost request's effect is awaited (its task may still be queued). */
  listingDelaysMs?: number[];
}

/** About half a minute in all: tasks of the service usually end within seconds. */
export const LISTING_DELAYS_MS = [250, 500, 1000, 2000, 4000, 8000, 16000];

/** Whether a message names `code` as a whole word. */
export function mentionsCode(code: string, message: string): boolean {
  const escaped = code.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_-])${escaped}($|[^A-Za-z0-9_-])`).test(message);
}

export async function submitBatch<T>(client: WdsClient, items: T[], options: SubmitOptions<T>, retryUnnamed = true): Promise<BatchOutcome<T>[]> {
  const { record, stats } = options;
  const id = await record?.sending(items);
  let ref: TaskRef;
  try {
    stats.requests += 1;
    ref = await options.send(items);
  } catch (error) {
    if (stoppedBeforeSending(error, options.signal)) {
      stats.requests -= 1;
      if (id !== undefined) await record!.settled(id, items.map(() => false), 'not sent: the run was stopped while the request waited to leave');
      return [];
    }
    if (!isWdsError(error)) throw error;
    if (error instanceof RequestBodyError && error.item && items[error.item.index] !== undefined) {
      // One file is not what was checked: the request was cut off before its end, so the service
      // has none of it; that file fails and the others go again without it.
      const { index, reason } = error.item;
      if (id !== undefined) await record!.settled(id, items.map(() => false), `not sent: ${reason}`);
      const others = items.filter((_, i) => i !== index);
      return [{ item: items[index]!, outcome: 'failed', reason }, ...(others.length ? await submitBatch(client, others, options, retryUnnamed) : [])];
    }
    if (error.code === 'UPDATE_OUTCOME_UNKNOWN') {
      const what = error.cause instanceof Error ? `the answer to the request was lost (${error.cause.message})`
        : error.status ? `the service answered ${error.status}, which does not tell whether it carried out the request`
        : 'the answer to the request was lost';
      return resolveLost(items, options, id, what);
    }
    // Refused: the service did nothing with it.
    if (id !== undefined) await record!.settled(id, items.map(() => false), `refused: ${error.message}`);
    // Credentials or permissions refused are fatal for the run, not for these files.
    if (error.code === 'AUTHENTICATION' || error.code === 'FORBIDDEN') throw error;
    return items.map((item) => ({ item, outcome: 'failed', reason: `the request was refused: ${error.message}` }));
  }
  if (id !== undefined) await record!.task(id, ref.taskId);
  const task = await followTask(client, ref.taskId);
  if (typeof task === 'string') return resolveLost(items, options, id, `the end of task ${ref.taskId} could not be read (${task})`, ref.taskId);
  if (task.status === 'ERROR') return afterError(items, options, id, task);
  if (id !== undefined) await record!.settled(id, items.map(() => task.status === 'OK'), `task ${task.id} ended ${task.status}`);
  if (task.status === 'OK') return items.map((item) => ({ item, outcome: 'ok' }));
  const named: BatchOutcome<T>[] = [];
  const unnamed: T[] = [];
  for (const item of items) {
    const own = task.messages.filter((m) => options.names(item, m, items));
    if (own.length) named.push({ item, outcome: 'failed', reason: own.join('; ') });
    else unnamed.push(item);
  }
  if (!unnamed.length) return named;
  if (!retryUnnamed || named.length === 0 || options.signal?.aborted) {
    const said = task.messages.join('; ') || 'no message';
    return [...named, ...unnamed.map((item) => ({ item, outcome: 'failed' as const, reason: `task ${task.id} ended NG: ${said}` }))];
  }
  stats.resubmitted += unnamed.length;
  return [...named, ...(await submitBatch(client, unnamed, options, false))];
}

/**
 * Whether `send` gave up because the run was stopped while its request waited (for the limits, or
 * to be sent again after a refusal): the service has nothing of it. `send` passes the run's signal
 * as the call's `stopBeforeSending`, whose reason is what it then throws.
 */
function stoppedBeforeSending(error: unknown, signal: AbortSignal | undefined): boolean {
  return !!signal?.aborted && error === signal.reason;
}

/**
 * The task followed to its end, or why its end could not be read. Reading it is tried three
 * times (each read is retried by the client too) before the listing has to tell instead.
 */
async function followTask(client: WdsClient, taskId: number): Promise<FinalTask | string> {
  let why = '';
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      return await client.tasks.wait(taskId);
    } catch (error) {
      if (!isWdsError(error)) throw error;
      if (error.code === 'AUTHENTICATION' || error.code === 'FORBIDDEN') throw error;
      why = error.message;
      if (error.code === 'NOT_FOUND') break;
      await sleep(1000 * (attempt + 1));
    }
  }
  return why;
}

/**
 * A task that ended ERROR, an unexpected failure whose effect the specification leaves open: one
 * listing says which files the service holds all the same (ok), the others failed.
 */
async function afterError<T>(items: T[], options: SubmitOptions<T>, id: string | undefined, task: FinalTask): Promise<BatchOutcome<T>[]> {
  const reason = `task ${task.id} ended ERROR: ${task.messages.join('; ') || 'no message'}`;
  let held: (boolean | null)[] = items.map(() => false);
  if (options.held) {
    try {
      held = await options.held(items);
    } catch {
      // Nothing to tell them apart: as an ERROR task usually does, it is taken to have done nothing.
    }
  }
  if (id !== undefined) await options.record!.settled(id, held.map((h) => h === true), reason);
  return items.map((item, i) => held[i] === true
    ? { item, outcome: 'ok', reason: `confirmed by the listing after ${reason}` }
    : { item, outcome: 'failed', reason });
}

/**
 * A request whose effect is unknown: the listing is read until it shows every item applied, or
 * about half a minute has passed (the task may still be queued). Items the listing shows are ok,
 * and the others failed when it shows some of them (the task ran, and applies all or nothing of
 * what it names); when it shows none, nothing tells whether the task is still queued, so they
 * are unknown and the journal keeps the request open for the next run to resolve.
 */
async function resolveLost<T>(items: T[], options: SubmitOptions<T>, id: string | undefined, what: string, taskId?: number): Promise<BatchOutcome<T>[]> {
  const task = taskId === undefined ? '' : ` (task ${taskId})`;
  if (options.dryRun) {
    return items.map((item) => ({ item, outcome: 'unknown', reason: `dry run: ${what}, so whether the service would accept this file is unknown; nothing was changed${task}` }));
  }
  if (!options.held) {
    return items.map((item) => ({ item, outcome: 'unknown', reason: `${what}; check these files in the service before sending them again${task}` }));
  }
  const held = await awaitListing(items, options.held, options.listingDelaysMs ?? LISTING_DELAYS_MS, options.signal);
  const some = held.some((h) => h === true);
  if (!some) {
    const reason = `${what}, and the listing does not show the file yet; the service may still be working on it${task}: ` +
      'run the import again later, and it checks before it sends anything again';
    return items.map((item) => ({ item, outcome: 'unknown', reason }));
  }
  const applied = held.map((h) => h === true);
  if (id !== undefined) await options.record!.settled(id, applied, `confirmed by the listing after ${what}`);
  return items.map((item, i) => applied[i]
    ? { item, outcome: 'ok', reason: `confirmed by the listing after ${what}` }
    : { item, outcome: 'failed', reason: `not applied: ${what}, and the listing shows the others of its request but not this file${task}` });
}

/**
 * Reads the listing after each pause until it shows every item held, and answers the last reading
 * (null for each item when no listing could be read, or the wait was cut short before the first).
 */
export async function awaitListing<T>(items: T[], held: HeldCheck<T>, delays: number[], signal?: AbortSignal): Promise<(boolean | null)[]> {
  let last: (boolean | null)[] = items.map(() => null);
  for (const delay of delays) {
    if (signal?.aborted) break;
    await sleep(delay, signal).catch(() => undefined);
    try {
      last = await held(items);
    } catch {
      // The listing failed too: try again after the next pause.
      continue;
    }
    if (last.every((h) => h === true)) break;
  }
  return last;
}

/** Where the submit stage tells what it did: a request about to leave, and each batch's outcomes. */
export interface SubmitStageEvents<T, L> {
  /** Called before each request leaves (the first marks the start of sending). */
  leaving?: () => void;
  /** A batch's outcomes, once its request (and any resubmission) has ended. */
  ended: (lane: L, batch: T[], outcomes: BatchOutcome<T>[], requests: number) => void;
}

/**
 * The submit stage: each batch as one update request as soon as it comes, its task followed to
 * the end ({@link submitBatch}). Once `signal` is aborted no request starts; the batches still
 * coming are taken and dropped, so that the stages before it end their work in hand.
 */
export async function submitBatches<T, L>(
  client: WdsClient,
  batches: AsyncIterable<{ lane: L; items: T[] }>,
  optionsFor: (lane: L) => SubmitOptions<T>,
  events: SubmitStageEvents<T, L>,
  signal?: AbortSignal,
): Promise<void> {
  for await (const { lane, items } of batches) {
    if (signal?.aborted) continue;
    events.leaving?.();
    const options = optionsFor(lane);
    const before = options.stats.requests;
    const outcomes = await submitBatch(client, items, options);
    // Stopped while it waited to leave: nothing of it was sent, nothing to tell.
    if (!outcomes.length && items.length) continue;
    events.ended(lane, items, outcomes, options.stats.requests - before);
  }
}

/**
 * The submit stage of a plan (`checkOnly`): each batch counted as the one request a run would send
 * for it, its items as a run would find them before their task; nothing is sent.
 */
export async function countBatches<T, L>(
  _client: WdsClient,
  batches: AsyncIterable<{ lane: L; items: T[] }>,
  _optionsFor: (lane: L) => SubmitOptions<T>,
  events: SubmitStageEvents<T, L>,
  signal?: AbortSignal,
): Promise<void> {
  for await (const { lane, items } of batches) {
    if (signal?.aborted) continue;
    events.ended(lane, items, items.map((item) => ({ item, outcome: 'ok' as const })), 1);
  }
}
