/**
 * Options of `new WdsClient(...)`, validated once with messages that name the option and the bad
 * value (p-queue's habit). The interfaces carry the docs; the zod schema below does the checking,
 * and a compile-time check keeps the two the same.
 */
import { z } from 'zod';
import type { WindowStore } from './window-store.js';
import type { Dispatcher } from 'undici';
import type { WaitEvent } from './limiter.js';
import {
  credentialFields, connectionFields, limitsSchema, loggerSchema, onWaitSchema, parseOptions, retrySchema, stateFileSchema, timingFields, tokenCacheSchema, windowSchema, windowStoreSchema,
  type Logger,
} from './option-schema.js';
import { REQUESTS_PER_HOUR, TOKENS_PER_HOUR, UPDATE_REQUESTS_PER_MINUTE } from '../spec/limits.js';

export type { Logger } from './option-schema.js';

/** One of the client's own limits: at most `limit` requests in any `windowMs` milliseconds. */
export interface WindowOption {
  /** Requests allowed in the window; a positive integer. */
  limit: number;
  /** The window's length in milliseconds. */
  windowMs: number;
}

/** The service's limits as the client keeps them (see {@link WdsClientOptions.limits}). */
export interface WdsClientLimits {
  /** Update requests (those that answer a task). Default 5 a minute, as the service allows. */
  update?: WindowOption;
  /** All requests. Default 3,000 an hour, as the service allows. */
  request?: WindowOption;
  /** Token issuance. Default 1,000 an hour, as the service allows. */
  token?: WindowOption;
  /**
   * How much longer than the service each window is held, as a share of the window (0 to 1).
   * Each request is counted again when its answer comes, after the service counted it, so little
   * is needed. Default: 250 ms, or 5 % of a window shorter than 5 s.
   */
  marginRatio?: number;
}

/** When and how often a failed request is sent again. */
export interface WdsClientRetry {
  /** Attempts for reads and for the retryable failures of updates, the first one included. Default 6. */
  maxAttempts?: number;
  /** First backoff delay in milliseconds; it doubles with each attempt, with jitter. Default 300. */
  baseDelayMs?: number;
  /** Longest backoff delay in milliseconds. Default 20,000. */
  maxDelayMs?: number;
  /**
   * Longest single wait the service may ask for with Retry-After (on 429 and 503) before the
   * request fails instead, in milliseconds. Default 2,400,000 (40 minutes).
   */
  maxRetryAfterMs?: number;
}

/** Options of {@link WdsClient}: the service's address and credentials, and how the client behaves. */
export interface WdsClientOptions {
  /**
   * The service's address, such as `https://example.com`: http or https. A trailing `/` and a
   * trailing `/api/v2.0` are dropped.
   */
  baseUrl: string;
  /** The API consumer key of the company. */
  consumerKey: string;
  /** The consumer secret that goes with the key. It never appears in logs, errors or reports. */
  consumerSecret: string;
  /**
   * Send `Dry-Run: 1` on every registration and update: the service checks the request and
   * changes nothing. Each update method can override it. Default false.
   */
  dryRun?: boolean;
  /**
   * The service's limits as the client keeps them, in windows shared through `stateFile` by every
   * run with the same consumer key: a request that would be refused waits instead, and the wait
   * is announced through `onWait`. Defaults: 5 update requests a minute, 3,000 requests and 1,000
   * tokens an hour. `false` switches the client's own windows off: requests go out at once, and
   * the service's 429 answers are waited out as their Retry-After says and sent again. The CLI
   * takes this from the environment variable `WDS_CLIENT_LIMITS` (`off`, or a list such as
   * `update=5/1m,request=3000/1h`).
   */
  limits?: false | WdsClientLimits;
  /**
   * The file where the windows are kept, shared by every process with the same consumer key;
   * `false` keeps them in this client's memory only. Default
   * `$XDG_CACHE_HOME/wds-files/limits-<hash of the consumer key>.json` (`~/.cache` when
   * XDG_CACHE_HOME is not set).
   */
  stateFile?: string | false;
  /**
   * A store shared by many processes or machines that keeps the windows instead of `stateFile`,
   * such as the fleet's table in PostgreSQL. Default: none.
   */
  windowStore?: WindowStore;
  /**
   * Keep the access token between runs, so that a run shortly after another uses its token rather
   * than taking another of the hour's: `true` for the default file,
   * `$XDG_STATE_HOME/wds-files/tokens/v2-<hash of the base URL and the consumer key>.json`
   * (`~/.local/state` when XDG_STATE_HOME is not set), or the file's path. The file is written
   * with mode 0600 and holds the token in clear, as a logged-in CLI's credentials file does. A
   * token issued for another consumer secret is not used. Default false: nothing on disk. The CLI
   * turns it on (`WDS_TOKEN_CACHE=off` turns it off).
   */
  tokenCache?: boolean | string;
  /** When and how often a failed request is sent again (each field has its default). */
  retry?: WdsClientRetry;
  /** Time allowed for one request's answer, in milliseconds. Default 120,000 (a 250 MB upload takes a while). */
  timeoutMs?: number;
  /** Renew the access token this many milliseconds before it expires. Default 60,000. */
  tokenRenewBeforeMs?: number;
  /** Connections to the API host. Default 8. */
  connections?: number;
  /** Called each time a request waits: for a limit's window, a Retry-After, or a backoff before a retry. */
  onWait?: (event: WaitEvent) => void;
  /** Receives the client's waits and retries as lines. Default: none. */
  logger?: Logger;
  /** An undici Dispatcher for every request (a proxy agent, say). Default: the client's own connection pools. */
  dispatcher?: Dispatcher;
  /**
   * An undici Dispatcher for update requests (and token requests) only, beside `dispatcher` for
   * reads: a fleet worker shares its pools between runs. Default: `dispatcher`, else a pool of the
   * client's own that opens a connection per request.
   */
  updateDispatcher?: Dispatcher;
  /** The User-Agent header. Default `wds-files`. */
  userAgent?: string;
}

const optionsSchema = z.strictObject({
  ...credentialFields,
  dryRun: z.boolean().default(false),
  limits: limitsSchema({
    update: windowSchema.default({ limit: UPDATE_REQUESTS_PER_MINUTE, windowMs: 60_000 }),
    request: windowSchema.default({ limit: REQUESTS_PER_HOUR, windowMs: 3_600_000 }),
    token: windowSchema.default({ limit: TOKENS_PER_HOUR, windowMs: 3_600_000 }),
  }),
  stateFile: stateFileSchema,
  windowStore: windowStoreSchema,
  tokenCache: tokenCacheSchema,
  retry: retrySchema,
  ...timingFields,
  connections: z.number().int().positive().default(8),
  onWait: onWaitSchema<WaitEvent>(),
  logger: loggerSchema,
  ...connectionFields,
  updateDispatcher: z.custom<Dispatcher>((v) => !!v && typeof v === 'object', 'updateDispatcher must be an undici Dispatcher').optional(),
});

/** True when A and B are the same type, optional keys included. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
// Fails to compile when the schema and the documented interface drift apart.
const schemaMatchesInterface: Same<z.input<typeof optionsSchema>, WdsClientOptions> = true;
void schemaMatchesInterface;

/** The options with every default filled in. */
export type ResolvedOptions = z.output<typeof optionsSchema>;

export function resolveOptions(options: WdsClientOptions): ResolvedOptions {
  const data = parseOptions(optionsSchema, options, 'client');
  // The API's own address (`https://example.com/api/v2.0`, as the emulator's banner and the
  // service's docs show it) is taken as the service's address, so the path is not doubled.
  return { ...data, baseUrl: data.baseUrl.replace(/\/+$/, '').replace(/\/api\/v2\.0$/, '') };
}
