/** `GET /tasks/{task_id}` (api-v2.md 4.2; statuses of wire-format.md). */
import type { RouteHandler } from '../context.js';
import { intParam } from '../context.js';
import { notFound } from '../../http-error.js';

export const getTask: RouteHandler = async (ctx) => {
  const id = intParam(ctx, 'task_id');
  await ctx.company.tasks.tick();
  const task = ctx.company.tasks.get(id);
  if (!task) throw notFound(`task ${id}`);
  // Messages are absent while a task is not final (wire-format.md, Common).
  const final = task.status === 'OK' || task.status === 'NG' || task.status === 'ERROR';
  return { body: final ? task : { id: task.id, status: task.status } };
};
