/**
 * The option checks `WdsClient` and `LegacyClient` share: the address and credentials, a limit's
 * window, retries, time limits, the logger and connection settings, and the one way a refused
 * option is reported (naming the option and the value, a secret hidden).
 */
import { z } from 'zod';
import type { Dispatcher } from 'undici';
import { OptionsError } from './errors.js';
import { DEFAULT_RETRY } from './retry.js';
import { redactUrl } from '../util/redact.js';
import type { WindowStore } from './window-store.js';

/** Where the client writes what it does; each line is already free of secrets. */
export interface Logger {
  /** Details. */
  debug(message: string): void;
  /** Waits and retries. */
  info(message: string): void;
  /** What went wrong but was dealt with. */
  warn(message: string): void;
}

export const windowSchema = z.strictObject({
  limit: z.number().int().positive(),
  windowMs: z.number().positive(),
});

/**
 * A client's own limits: `false` for none, or its `windows` (each with its default) and the margin
 * each is held beyond the service's.
 */
export function limitsSchema<W extends Record<string, z.ZodDefault<typeof windowSchema>>>(windows: W) {
  const schema = z.union([z.literal(false), z.strictObject({ ...windows, marginRatio: z.number().min(0).max(1).optional() })]);
  // Every window has its default, so `{}` stands for them all; TypeScript cannot see that through W.
  return schema.prefault({} as z.input<typeof schema>);
}

/**
 * What is wrong with a service address, in words that fit after its name, or null. A user name
 * or password in it is refused: the service signs in with the consumer key and secret only, and
 * an address that carries a password gets printed and logged where a secret must not be.
 */
export function baseUrlProblem(url: string): string | null {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (!parsed?.host || !/^https?:$/.test(parsed.protocol)) return 'must be an http(s) URL such as https://example.com';
  if (parsed.username || parsed.password) return 'must not carry a user name or password (the service signs in with the consumer key and secret only)';
  return null;
}

/** The service's address and the company's credentials. */
export const credentialFields = {
  baseUrl: z.string().check((ctx) => {
    const problem = baseUrlProblem(ctx.value);
    if (problem) ctx.issues.push({ code: 'custom', message: `baseUrl ${problem}`, input: ctx.value });
  }),
  consumerKey: z.string().min(1, 'consumerKey must not be empty'),
  consumerSecret: z.string().min(1, 'consumerSecret must not be empty'),
};

export const stateFileSchema = z.union([z.string().min(1), z.literal(false)]).optional();

export const windowStoreSchema = z
  .custom<WindowStore>((v) => !!v && typeof v === 'object' && typeof (v as WindowStore).update === 'function', 'windowStore must have an update method')
  .optional();

export const tokenCacheSchema = z.union([z.boolean(), z.string().min(1)]).default(false);

export const retrySchema = z
  .strictObject({
    maxAttempts: z.number().int().min(1).default(DEFAULT_RETRY.maxAttempts),
    baseDelayMs: z.number().min(0).default(DEFAULT_RETRY.baseDelayMs),
    maxDelayMs: z.number().min(0).default(DEFAULT_RETRY.maxDelayMs),
    maxRetryAfterMs: z.number().min(0).default(DEFAULT_RETRY.maxRetryAfterMs),
  })
  .prefault({});

/** How long a request's answer may take and when the token is renewed. */
export const timingFields = {
  timeoutMs: z.number().positive().default(120_000),
  tokenRenewBeforeMs: z.number().min(0).default(60_000),
};

export function onWaitSchema<E>() {
  return z.custom<(event: E) => void>((v) => typeof v === 'function', 'onWait must be a function').optional();
}

export const loggerSchema = z
  .custom<Logger>((v) => !!v && typeof v === 'object' && typeof (v as Logger).debug === 'function', 'logger must have debug, info and warn')
  .optional();

/** The connection settings every client takes last. */
export const connectionFields = {
  dispatcher: z.custom<Dispatcher>((v) => !!v && typeof v === 'object', 'dispatcher must be an undici Dispatcher').optional(),
  userAgent: z.string().default('wds-files'),
};

/**
 * The options checked by `schema`, or an OptionsError naming the first refused option, the rule
 * and the value given (a secret's value hidden); `client` names the client, as in `invalid client option`.
 */
export function parseOptions<S extends z.ZodType>(schema: S, options: unknown, client: string): z.output<S> {
  const result = schema.safeParse(options);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const name = issue.path.join('.') || 'options';
  const given = issue.path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined), options);
  const shown = /secret/i.test(name) ? '(hidden)' : name === 'baseUrl' && typeof given === 'string' ? JSON.stringify(redactUrl(given)) : JSON.stringify(given) ?? String(given);
  throw new OptionsError(`invalid ${client} option ${name}: ${issue.message} (got ${shown})`);
}
