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
