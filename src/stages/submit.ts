/**
 * Submits a batch as one update request and follows its task to the end (DESIGN.md section 5):
 * `OK` settles every item; `NG` attaches each message to the items it names (by member code) and
 * sends the items it does not name once more in a request of their own, because an NG task changes
 * nothing and they were refused only for their neighbours; `ERROR` and a lost answer fail the
 * batch, which is never sent again blind.
 */
import type { WdsClient } from '../client/client.js';
import { isUpdateOutcomeUnknownError, isWdsError } from '../client/errors.js';
import type { TaskRef } from '../client/resources/common.js';

export interface BatchOutcome<T> {
  item: T;
  ok: boolean;
  /** Why it failed; for an OK item, nothing. */
  reason?: string;
}

export interface SubmitStats {
  requests: number;
  resubmitted: number;
}

/** Whether a message names `code` as a whole word. */
export function mentionsCode(code: string, message: string): boolean {
  const escaped = code.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_-])${escaped}($|[^A-Za-z0-9_-])`).test(message);
}

export async function submitBatch<T>(
  client: WdsClient,
  items: T[],
  /** Whether a task message is about this item (by its member code, and its file name if need be). */
  names: (item: T, message: string, batch: T[]) => boolean,
  send: (items: T[]) => Promise<TaskRef>,
  stats: SubmitStats,
  retryUnnamed = true,
): Promise<BatchOutcome<T>[]> {
  let ref: TaskRef;
  try {
    stats.requests += 1;
    ref = await send(items);
  } catch (error) {
    if (!isWdsError(error)) throw error;
    const message = error.message;
    const reason = isUpdateOutcomeUnknownError(error)
      ? `${message} (the request held ${items.length} files)`
      : `the request was refused: ${message}`;
    // Credentials or permissions refused are fatal for the run, not for these files.
    if (error.code === 'AUTHENTICATION' || error.code === 'FORBIDDEN') throw error;
    return items.map((item) => ({ item, ok: false, reason }));
  }
  const task = await client.tasks.wait(ref.taskId);
  if (task.status === 'OK') return items.map((item) => ({ item, ok: true }));
  if (task.status === 'ERROR') {
    const said = task.messages.join('; ') || 'no message';
    return items.map((item) => ({ item, ok: false, reason: `task ${task.id} ended ERROR: ${said}` }));
  }
  const named: BatchOutcome<T>[] = [];
  const unnamed: T[] = [];
  for (const item of items) {
    const own = task.messages.filter((m) => names(item, m, items));
    if (own.length) named.push({ item, ok: false, reason: own.join('; ') });
    else unnamed.push(item);
  }
  if (!unnamed.length) return named;
  if (!retryUnnamed || named.length === 0) {
    const said = task.messages.join('; ') || 'no message';
    return [...named, ...unnamed.map((item) => ({ item, ok: false, reason: `task ${task.id} ended NG: ${said}` }))];
  }
  stats.resubmitted += unnamed.length;
  return [...named, ...(await submitBatch(client, unnamed, names, send, stats, false))];
}
