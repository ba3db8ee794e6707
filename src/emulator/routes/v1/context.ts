/**
 * What a legacy route handler is given, and the helpers the handlers share: strict body parsing
 * with zod (400 naming each field), the `{"status": "NG", "errors": [...]}` error shape, and the
 * update answer, which is a task or, in dry-run, the verdict of the same checks.
 */
import type { z } from 'zod';
import type { Company } from '../../company.js';
import { HttpError } from '../../http-error.js';
import { failingWhen } from '../../tasks.js';
import { legacyState } from './state.js';

export type LegacyVersion = 'v1.0' | 'v1.1' | 'v1.2';

export interface LegacyContext {
  company: Company;
  version: LegacyVersion;
  params: Record<string, string>;
  /** The JSON body without its `dryrun` key; `{}` when none was sent. */
  body: Record<string, unknown>;
  dryRun: boolean;
  /** Whether the task this request creates is to end ERROR (the control API's `task_error_rate`). */
  taskFails?: () => boolean;
}

export interface LegacyResult {
  status?: number;
  body: unknown;
}

export type LegacyHandler = (ctx: LegacyContext) => LegacyResult | Promise<LegacyResult>;

/** A refusal: HTTP status and the messages of `errors`. */
export const refuse = (status: number, errors: string | string[]): HttpError => new HttpError(status, errors);

/** Every issue of a zod error as one message naming the field by its path (`users[2].is_active`). */
export function issueMessages(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.reduce<string>(
      (text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${String(part)}` : String(part)),
      '',
    );
    if (issue.code === 'unrecognized_keys') {
      const where = path ? ` in ${path}` : '';
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}${where}`;
    }
    return `${path || 'the body'}: ${issue.message}`;
  });
}

/** Reads take no parameters: a field in their body is a 400 naming it, not silently ignored. */
export function noParameters(ctx: LegacyContext): void {
  const keys = Object.keys(ctx.body);
  if (keys.length) {
    throw refuse(400, `unknown field${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}: this operation takes no parameters`);
  }
}

export function parseLegacyBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const result = schema.safeParse(body);
  if (!result.success) throw refuse(400, issueMessages(result.error));
  return result.data;
}

/** The checks of an update, run when its task runs (or at once in dry-run). */
export interface LegacyPlan {
  errors: string[];
  apply: () => void;
}

/**
 * Answers an update. In dry-run the plan runs now against the data as it is and the answer is its
 * verdict; otherwise a task is queued that plans and applies when it runs, on the data as it is
 * then (updates are processed in order).
 */
export function updateAnswer(ctx: LegacyContext, items: number, plan: () => LegacyPlan): LegacyResult {
  const { company } = ctx;
  if (ctx.dryRun) {
    const decided = plan();
    return { body: { status: decided.errors.length ? 'NG' : 'OK', errors: decided.errors } };
  }
  const id = company.tasks.create(
    failingWhen(ctx.taskFails?.() ?? false, () => {
      const decided = plan();
      if (decided.errors.length) return decided.errors;
      company.atOneTime(() => decided.apply());
      company.changed();
      return [];
    }),
    { items, dryRun: false },
  );
  legacyState(company).taskIds.add(id);
  return { body: { progress_id: id, status: 'WAITING' } };
}

/** `YYYY-MM-DD...` as the legacy interface writes dates: `YYYY/MM/DD...`. */
export const slashDate = (value: string | null | undefined): string => (value ? value.replace(/^(\d{4})-(\d{2})(?:-(\d{2}))?/, (_, y: string, m: string, d?: string) => (d ? `${y}/${m}/${d}` : `${y}/${m}`)) : '');

/** A date sent as `YYYY/MM/DD` or `YYYY-MM-DD`, in the stored form `YYYY-MM-DD`. */
export const dashDate = (value: string): string => value.replace(/^(\d{4})\/(\d{1,2})\/(\d{1,2})$/, (_, y: string, m: string, d: string) => `${y}-${m.padStart(2, '0')}-${d.padStart(2, '0')}`);
