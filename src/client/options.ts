/**
 * Options of `new WdsClient(...)`, validated once with messages that name the option and the bad
 * value (p-queue's habit).
 */
import { z } from 'zod';
import type { Dispatcher } from 'undici';
import { OptionsError } from './errors.js';
import type { WaitEvent } from './limiter.js';
import { DEFAULT_RETRY } from './retry.js';
import { REQUESTS_PER_HOUR, TOKENS_PER_HOUR, UPDATE_REQUESTS_PER_MINUTE } from '../spec/limits.js';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
}

const windowSchema = z.strictObject({
  limit: z.number().int().positive(),
  windowMs: z.number().positive(),
});

const optionsSchema = z.strictObject({
  /** The service's base URL, without `/api/v2.0`. */
  baseUrl: z.url({ protocol: /^https?$/, error: 'baseUrl must be an http(s) URL such as https://example.com' }),
  consumerKey: z.string().min(1, 'consumerKey must not be empty'),
  consumerSecret: z.string().min(1, 'consumerSecret must not be empty'),
  /** Sends `Dry-Run: 1` on every registration and update operation. Default false. */
  dryRun: z.boolean().default(false),
  /**
   * The service's limits as the client keeps them, in windows shared through `stateFile` by every
   * run with the same consumer key. Defaults: 5 update requests a minute, 3,000 requests and 1,000
   * tokens an hour (api-v2.md 8). `false` switches the client's own windows off: requests go out
   * at once, and the service's 429 answers are waited out as their Retry-After says and sent again.
   * The CLI takes this from the environment variable `WDS_CLIENT_LIMITS` (`off`, or a list such
   * as `update=5/1m,request=3000/1h`; see limits-setting.ts).
   */
  limits: z
    .union([
      z.literal(false),
      z.strictObject({
        update: windowSchema.default({ limit: UPDATE_REQUESTS_PER_MINUTE, windowMs: 60_000 }),
        request: windowSchema.default({ limit: REQUESTS_PER_HOUR, windowMs: 3_600_000 }),
        token: windowSchema.default({ limit: TOKENS_PER_HOUR, windowMs: 3_600_000 }),
        marginRatio: z.number().min(0).max(1).optional(),
      }),
    ])
    .prefault({}),
  /** Where the windows are kept across processes; `false` keeps them in memory only. */
  stateFile: z.union([z.string().min(1), z.literal(false)]).optional(),
  retry: z
    .strictObject({
      maxAttempts: z.number().int().min(1).default(DEFAULT_RETRY.maxAttempts),
      baseDelayMs: z.number().min(0).default(DEFAULT_RETRY.baseDelayMs),
      maxDelayMs: z.number().min(0).default(DEFAULT_RETRY.maxDelayMs),
      maxRetryAfterMs: z.number().min(0).default(DEFAULT_RETRY.maxRetryAfterMs),
    })
    .prefault({}),
  /** Time allowed for one request's answer. Default 120 s (a 250 MB upload takes a while). */
  timeoutMs: z.number().positive().default(120_000),
  /** Renew the token this long before it expires. Default 60 s. */
  tokenRenewBeforeMs: z.number().min(0).default(60_000),
  /** Connections to the API host. Default 8. */
  connections: z.number().int().positive().default(8),
  onWait: z.custom<(event: WaitEvent) => void>((v) => typeof v === 'function', 'onWait must be a function').optional(),
  logger: z
    .custom<Logger>((v) => !!v && typeof v === 'object' && typeof (v as Logger).debug === 'function', 'logger must have debug, info and warn')
    .optional(),
  dispatcher: z.custom<Dispatcher>((v) => !!v && typeof v === 'object', 'dispatcher must be an undici Dispatcher').optional(),
  userAgent: z.string().default('wds-files'),
});

export type WdsClientOptions = z.input<typeof optionsSchema>;
export type ResolvedOptions = z.output<typeof optionsSchema>;

export function resolveOptions(options: WdsClientOptions): ResolvedOptions {
  const result = optionsSchema.safeParse(options);
  if (result.success) return { ...result.data, baseUrl: result.data.baseUrl.replace(/\/+$/, '') };
  const issue = result.error.issues[0]!;
  const name = issue.path.join('.') || 'options';
  const given = issue.path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined), options);
  const shown = /secret/i.test(name) ? '(hidden)' : JSON.stringify(given) ?? String(given);
  throw new OptionsError(`invalid client option ${name}: ${issue.message} (got ${shown})`);
}
