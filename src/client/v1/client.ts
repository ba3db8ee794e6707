/**
 * `LegacyClient`: the 16 operations of the service's legacy interface (v1.0 to v1.2) with
 * tokens, its own limits (60 requests an hour, 5 tokens in 60 minutes), retries of reads and
 * dry-run handled (issue 18).
 */
import { ApiError, OptionsError, TimeoutError } from '../errors.js';
import { resolveLegacyOptions, type LegacyClientOptions, type ResolvedLegacyOptions } from './options.js';
import { kindOf, normalisePath } from './operations.js';
import { LegacyTransport } from './transport.js';
import { LegacyDepartments, LegacyUsers } from './resources.js';
import { LegacySheets } from './sheets.js';
import { LegacyTasks } from './tasks.js';
import type { LegacyRawAnswer, LegacyRequestOptions } from './types.js';

/**
 * A client of the service's legacy interface (v1.x). The hourly budget is tight: a request that
 * would be refused waits instead, and says so through `onWait`. Updates answer a progress id;
 * follow it with `tasks.wait`.
 *
 * @example
 * ```ts
 * const legacy = new LegacyClient({ baseUrl: 'https://example.com', consumerKey, consumerSecret });
 * const { data } = await legacy.sheets.get(0);
 * await legacy.close();
 * ```
 */
export class LegacyClient {
  /** @internal The options with their defaults. */
  readonly options: ResolvedLegacyOptions;
  /** @internal */
  readonly transport: LegacyTransport;
  /** User accounts (operations 2 to 4). */
  readonly users: LegacyUsers;
  /** Departments (operations 5 to 7). */
  readonly departments: LegacyDepartments;
  /** Sheets (operations 8 to 10, 15, 16) and the asynchronous read (12 to 14). */
  readonly sheets: LegacySheets;
  /** Tasks of updates (operation 11), and waiting for one to end. */
  readonly tasks: LegacyTasks;

  /** Checks the options (an invalid one throws OptionsError naming it); nothing is sent until the first call. */
  constructor(options: LegacyClientOptions) {
    this.options = resolveLegacyOptions(options);
    this.transport = new LegacyTransport(this.options);
    this.users = new LegacyUsers(this.transport);
    this.departments = new LegacyDepartments(this.transport);
    this.sheets = new LegacySheets(this.transport);
    this.tasks = new LegacyTasks(this.transport);
  }

  /**
   * The raw call behind `wds-files legacy api`: POST `{base}/api/{version}/{path}` with `body`
   * (`{}` when undefined), with the token, the limits, retries of reads and redaction. A path the
   * document does not list is treated as an update: never sent again after a lost answer. Dry-run
   * (`dryrun: 1`) applies to any path when asked for here; the client's `dryRun` to updates only.
   * A 2xx answer is returned; others throw the error of their status (`ApiError` and kin).
   */
  async request(path: string, body?: unknown, options: LegacyRequestOptions = {}): Promise<LegacyRawAnswer> {
    const p = normalisePath(path);
    if (p === 'get_token') throw new OptionsError('the client gets its tokens itself; /get_token cannot be called through request');
    const kind = kindOf(p);
    const dryRun = options.dryRun ?? (kind === 'update' && this.options.dryRun);
    return this.transport.post(p, { body, dryRun, signal: options.signal });
  }

  /** Closes the client's connections (those of a `dispatcher` you gave stay open). */
  close(): Promise<void> {
    return this.transport.close();
  }
}

/**
 * True when `error` is a request that ran out of time: no answer within `timeoutMs`, or the
 * service's own 504. `wds-files legacy sheet` then reads the sheet with `sheets.readAsync`.
 */
export function isLegacyTimeout(error: unknown): boolean {
  return error instanceof TimeoutError || (error instanceof ApiError && error.status === 504);
}
