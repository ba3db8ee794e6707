/** What every resource of the client shares. */
import { taskIdSchema } from '../../spec/schemas.js';
import type { OperationId } from '../../spec/operations.js';
import type { CallOptions, Transport } from '../transport.js';

/** Options of every update method. */
export interface UpdateOptions {
  /** Validate only (`Dry-Run: 1`); default: the client's dryRun. */
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface TaskRef {
  taskId: number;
}

/** Sends an operation that answers `{task_id}`. */
export async function submitTask(transport: Transport, id: OperationId, call: CallOptions): Promise<TaskRef> {
  const answer = await transport.call(id, call, taskIdSchema);
  return { taskId: answer.task_id };
}
