/** What every resource of the client shares. */
import { taskIdSchema } from '../../spec/schemas.js';
import type { OperationId } from '../../spec/operations.js';
import type { CallOptions, Transport } from '../transport.js';

/** Options of every update method. */
export interface UpdateOptions {
  /** Validate only (`Dry-Run: 1`): the service checks the request and changes nothing. Default: the client's `dryRun`. */
  dryRun?: boolean;
  /** Stops the request (and its waits for the limits). */
  signal?: AbortSignal;
  /**
   * Stops the request only while it is not on its way (its waits for the limits, or before it is
   * sent again): a request already sent is not cut, so the update's outcome stays known.
   */
  stopBeforeSending?: AbortSignal;
}

/**
 * A request body produced piece by piece, in place of the items: the whole JSON body of the
 * operation, as `JSON.stringify` of its items would give it. A factory, because a retried request
 * needs the body again from its start. Large imports send this way so that no request is held
 * whole in memory.
 */
export interface StreamedBody {
  /** Yields the body's bytes, from its start, each time it is called. */
  stream: () => AsyncIterable<Uint8Array>;
}

/** The transport's body options for items or a streamed body. */
export function bodyOf(items: unknown[] | StreamedBody, body: (items: unknown[]) => unknown): Pick<CallOptions, 'body' | 'bodyStream'> {
  return Array.isArray(items) ? { body: body(items) } : { bodyStream: items.stream };
}

/** An update the service accepted and runs as a task; follow it with `client.tasks.wait(taskId)`. */
export interface TaskRef {
  /** The task's id. */
  taskId: number;
}

/** Sends an operation that answers `{task_id}`. */
export async function submitTask(transport: Transport, id: OperationId, call: CallOptions): Promise<TaskRef> {
  const answer = await transport.call(id, call, taskIdSchema);
  return { taskId: answer.task_id };
}
