/**
 * Operation 11, `/task/{progress_id}`: the status of an update task (wire-format.md, Legacy v1.x),
 * with `errors` once it ended NG or ERROR.
 *
 * Choice where both documents are silent: a progress id that no v1 update returned (unknown, or a
 * v2 task) is 404 with `{"status": "NG", "errors": [...]}`; answering NG with HTTP 200 would read as
 * "the update failed" for an update that may never have existed.
 */
import { legacyState } from './state.js';
import { noParameters, refuse, type LegacyHandler } from './context.js';

export const getTask: LegacyHandler = (ctx) => {
  noParameters(ctx);
  const raw = ctx.params.progress_id ?? '';
  const id = /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  const task = legacyState(ctx.company).taskIds.has(id) ? ctx.company.tasks.get(id) : undefined;
  if (!task) throw refuse(404, `no task has progress_id ${raw}`);
  const body: Record<string, unknown> = { progress_id: task.id, status: task.status };
  if (task.status === 'NG' || task.status === 'ERROR') body.errors = task.messages;
  return { body };
};
