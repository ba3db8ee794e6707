/**
 * What a route handler of the API is given, and the helpers every handler shares: body parsing
 * with zod (400 with one message per problem), integer path parameters, and task creation with
 * the dry-run rule applied in one place.
 */
import type { z } from 'zod';
import type { Company } from '../company.js';
import type { Storage } from '../storage.js';
import type { OperationSpec } from '../../spec/operations.js';
import { describeIssues } from '../../spec/schemas.js';
import { HttpError, badRequest } from '../http-error.js';
import { failingWhen } from '../tasks.js';

export interface RouteContext {
  company: Company;
  storage: Storage;
  op: OperationSpec;
  params: Record<string, string>;
  query: URLSearchParams;
  /** Parsed JSON body; undefined for requests without one. */
  body: unknown;
  /** `Dry-Run: 1` (api-v2.md 4.1). */
  dryRun: boolean;
  /** `http://host:port` as the client reached the emulator, for download URLs. */
  baseUrl: string;
  /** Whether the task this request creates is to end ERROR (the control API's `task_error_rate`). */
  taskFails?: () => boolean;
}

export interface RouteResult {
  status?: number;
  body?: unknown;
}

export type RouteHandler = (ctx: RouteContext) => RouteResult | Promise<RouteResult>;

export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  if (body === undefined) throw badRequest('a JSON request body is required');
  const result = schema.safeParse(body);
  if (!result.success) throw badRequest(describeIssues(result.error));
  return result.data;
}

/** An integer path parameter (validated by the router already). */
export function intParam(ctx: RouteContext, name: string): number {
  return Number(ctx.params[name]);
}

/** A boolean query parameter such as `get_calc_type` (api-v2.md 4.2): `true` or `false`. */
export function boolQuery(ctx: RouteContext, name: string): boolean {
  const value = ctx.query.get(name);
  if (value === null || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw badRequest(`${name} must be true or false, got "${value}"`);
}

/** What a task's job decided: the NG messages, and the change to make when there are none. */
export interface TaskPlan {
  errors: string[];
  apply: () => void;
}

/**
 * Creates the task of an update request. `plan` runs when the task runs, against the data as it is
 * then; the change is made only when it finds no error and the request was not a dry run.
 */
export function createTask(ctx: RouteContext, items: number, plan: () => TaskPlan | Promise<TaskPlan>): RouteResult {
  const { company, dryRun } = ctx;
  const taskId = company.tasks.create(
    failingWhen(ctx.taskFails?.() ?? false, async () => {
      const decided = await plan();
      if (decided.errors.length) return decided.errors;
      if (!dryRun) {
        company.atOneTime(() => decided.apply());
        company.changed();
      }
      return [];
    }),
    { items, dryRun },
  );
  return { body: { task_id: taskId } };
}

/** Refuses an empty array where the service needs at least one element. */
export function requireNonEmpty(list: unknown[], name: string): void {
  if (list.length === 0) throw new HttpError(400, `${name} must hold at least one element`);
}
