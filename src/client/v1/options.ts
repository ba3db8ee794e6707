/**
 * Options of `new LegacyClient(...)`, validated once with messages that name the option. The
 * names are those of `WdsClientOptions` where the two clients share a setting; the limits are the
 * legacy interface's own (api-v1-legacy.md 8): 60 requests an hour and 5 tokens in 60 minutes.
 */
import { z } from 'zod';
import type { WindowStore } from '../window-store.js';
import type { Dispatcher } from 'undici';
import { defaultStateFile } from '../state-file.js';
import type { Logger, WdsClientRetry, WindowOption } from '../options.js';
import {
  credentialFields, connectionFields, limitsSchema, loggerSchema, onWaitSchema, parseOptions, retrySchema, stateFileSchema, timingFields, tokenCacheSchema, windowSchema, windowStoreSchema,
} from '../option-schema.js';
import { LEGACY_VERSIONS, type LegacyVersion } from './operations.js';

/** Requests a company may send to the legacy interface in an hour. */
export const LEGACY_REQUESTS_PER_HOUR = 60;
/** Tokens a company may be issued by the legacy interface in 60 minutes. */
export const LEGACY_TOKENS_PER_HOUR = 5;

/**
 * Why a request of the legacy client waits: one of its limits is full (`request-limit`,
 * `token-limit`), the service answered 429 (`rate-limited`) or 503 (`maintenance`), a failed read
 * backs off (`retry`), or a task or asynchronous read is polled again later (`poll`).
 */
export type LegacyWaitReason = 'request-limit' | 'token-limit' | 'rate-limited' | 'maintenance' | 'retry' | 'poll';

/** A wait of the legacy client, announced through `onWait` before it starts. */
export interface LegacyWaitEvent {
  /** Why the request waits. */
  reason: LegacyWaitReason;
  /** How long it waits, in milliseconds. */
  ms: number;
  /** The same as `ms`, under the name `WdsClient`'s wait events use. */
  waitMs: number;
  /** The wait in words, such as `waiting 58.6 s: 60 legacy requests per hour reached`. */
  message: string;
}

/** The legacy interface's limits as the client keeps them (see {@link LegacyClientOptions.limits}). */
export interface LegacyClientLimits {
  /** All requests, the token's included. Default 60 an hour, as the service allows. */
  request?: WindowOption;
  /** Token issuance. Default 5 in 60 minutes, as the service allows. */
  token?: WindowOption;
  /**
   * How much longer than the service each window is held, as a share of the window (0 to 1).
   * Each request is counted again when its answer comes, after the service counted it, so little
   * is needed. Default: 250 ms, or 5 % of a window shorter than 5 s.
   */
  marginRatio?: number;
}

/** How tasks and asynchronous reads are polled. */
export interface LegacyPollOptions {
  /** The first wait before polling again, in milliseconds; it doubles with each poll. Default 2,000. */
  intervalMs?: number;
  /**
   * The longest wait between polls, in milliseconds. Default 60,000: one poll a minute is the
   * hourly budget's own pace, so a long job leaves most of it to other requests.
   */
  maxIntervalMs?: number;
}

/** Options of {@link LegacyClient}: the service's address and credentials, and how the client behaves. */
export interface LegacyClientOptions {
  /**
   * The service's address, such as `https://example.com`: http or https. A trailing `/` and a
   * trailing `/api/<version>` are dropped.
   */
  baseUrl: string;
  /** The API consumer key of the company. */
  consumerKey: string;
  /** The consumer secret that goes with the key. It never appears in logs, errors or reports. */
  consumerSecret: string;
  /** The legacy version whose paths are used: `v1.0`, `v1.1` or `v1.2`. Default `v1.2`. */
  version?: LegacyVersion;
  /**
   * Send `dryrun: 1` with every update: the service checks it, answers whether it has errors and
   * changes nothing. Each update method can override it. Reads are not affected. Default false.
   */
  dryRun?: boolean;
  /**
   * The legacy interface's limits as the client keeps them, in windows shared through `stateFile`
   * by every run with the same consumer key: a request that would be refused waits instead, and the
   * wait is announced through `onWait`. Defaults: 60 requests an hour, 5 tokens in 60 minutes.
   * `false` switches them off: requests go out at once, and the service's 429 answers are waited
   * out as their Retry-After says and sent again.
   */
  limits?: false | LegacyClientLimits;
  /**
   * The file where the windows are kept, shared by every process with the same consumer key;
   * `false` keeps them in this client's memory only. Default
   * `$XDG_CACHE_HOME/wds-files/legacy-limits-<hash of the consumer key>.json` (`~/.cache` when
   * XDG_CACHE_HOME is not set): apart from `WdsClient`'s, because the two interfaces count apart.
   */
  stateFile?: string | false;
  /**
   * A store shared by many processes or machines that keeps the windows instead of `stateFile`,
   * such as the fleet's table in PostgreSQL. Default: none.
   */
  windowStore?: WindowStore;
  /**
   * Keep the access token between runs, so that a run shortly after another uses its token rather
   * than taking one of the 5 an hour: `true` for the default file,
   * `$XDG_STATE_HOME/wds-files/tokens/legacy-<version>-<hash of the base URL and the consumer key>.json`
   * (`~/.local/state` when XDG_STATE_HOME is not set), or the file's path. The file is written
   * with mode 0600 and holds the token in clear. A token issued for another consumer secret is not
   * used. Default false: nothing on disk. The CLI turns it on (`WDS_TOKEN_CACHE=off` turns it off).
   */
  tokenCache?: boolean | string;
  /** When and how often a failed read is sent again (each field has its default, as `WdsClient`'s). */
  retry?: WdsClientRetry;
  /** Time allowed for one request's answer, in milliseconds. Default 120,000. */
  timeoutMs?: number;
  /** Renew the access token this many milliseconds before it expires. Default 60,000. */
  tokenRenewBeforeMs?: number;
  /** How tasks and asynchronous reads are polled (each field has its default). */
  poll?: LegacyPollOptions;
  /** Called each time a request waits: for a limit's window, a Retry-After, a backoff or the next poll. */
  onWait?: (event: LegacyWaitEvent) => void;
  /** Receives the client's requests, waits and retries as lines, already free of secrets. Default: none. */
  logger?: Logger;
  /** Stops every call of the client, and their waits. Default: none. */
  signal?: AbortSignal;
  /** An undici Dispatcher for every request (a proxy agent, say). Default: the client's own connections. */
  dispatcher?: Dispatcher;
  /** The User-Agent header. Default `wds-files`. */
  userAgent?: string;
}

const optionsSchema = z.strictObject({
  ...credentialFields,
  version: z.enum(LEGACY_VERSIONS as [LegacyVersion, ...LegacyVersion[]], { error: 'version must be v1.0, v1.1 or v1.2' }).default('v1.2'),
  dryRun: z.boolean().default(false),
  limits: limitsSchema({
    request: windowSchema.default({ limit: LEGACY_REQUESTS_PER_HOUR, windowMs: 3_600_000 }),
    token: windowSchema.default({ limit: LEGACY_TOKENS_PER_HOUR, windowMs: 3_600_000 }),
  }),
  stateFile: stateFileSchema,
  windowStore: windowStoreSchema,
  tokenCache: tokenCacheSchema,
  retry: retrySchema,
  ...timingFields,
  poll: z
    .strictObject({
      intervalMs: z.number().min(0).default(2_000),
      maxIntervalMs: z.number().min(0).default(60_000),
    })
    .prefault({}),
  onWait: onWaitSchema<LegacyWaitEvent>(),
  logger: loggerSchema,
  signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, 'signal must be an AbortSignal').optional(),
  ...connectionFields,
});

/** True when A and B are the same type, optional keys included. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
// Fails to compile when the schema and the documented interface drift apart.
const schemaMatchesInterface: Same<z.input<typeof optionsSchema>, LegacyClientOptions> = true;
void schemaMatchesInterface;

/** The options with every default filled in. */
export type ResolvedLegacyOptions = z.output<typeof optionsSchema>;

export function resolveLegacyOptions(options: LegacyClientOptions): ResolvedLegacyOptions {
  const data = parseOptions(optionsSchema, options, 'legacy client');
  // The API's own address, as the service's docs show it, is taken as the service's address.
  return { ...data, baseUrl: data.baseUrl.replace(/\/+$/, '').replace(/\/api\/v\d+\.\d+$/, '') };
}

/** `~/.cache/wds-files/legacy-limits-<hash of the consumer key>.json`, XDG_CACHE_HOME honoured. */
export function defaultLegacyStateFile(consumerKey: string): string {
  return defaultStateFile(consumerKey, 'legacy-limits');
}
