/**
 * `WdsClient`: every operation of API v2 behind one transport that handles tokens, limits,
 * retries and dry-run (issue 3). The client knows nothing of files on disk.
 */
import { Limiter, limiterFor } from './limiter.js';
import { TokenManager } from './auth.js';
import { Transport, type CallOptions } from './transport.js';
import { resolveOptions, type ResolvedOptions, type WdsClientOptions } from './options.js';
import { defaultStateFile } from './state-file.js';
import { tokenCacheOf } from './token-cache.js';
import { WaitMeter } from './wait-meter.js';
import { Tasks } from './tasks.js';
import { Members } from './resources/members.js';
import { FaceImages } from './resources/face-images.js';
import { Sheets } from './resources/sheets.js';
import { Attachments } from './resources/attachments.js';
import { AdvancedPermissions, Departments, EnumOptions, Roles, Users, Webhooks } from './resources/organisation.js';
import type { OperationId } from '../spec/operations.js';
import type { z } from 'zod';

/**
 * A client of the service's API v2: every operation, with tokens, the service's limits, retries
 * and dry-run handled for you. Updates answer a task; follow it with `tasks.wait`.
 *
 * @example
 * ```ts
 * const client = new WdsClient({ baseUrl: 'https://example.com', consumerKey, consumerSecret });
 * const photos = await client.faceImages.list();
 * await client.close();
 * ```
 */
export class WdsClient {
  /** @internal The options with their defaults. */
  readonly options: ResolvedOptions;
  /** @internal */
  readonly limiter: Limiter | null;
  /** @internal */
  readonly tokens: TokenManager;
  /** @internal */
  readonly transport: Transport;
  /** Members. */
  readonly members: Members;
  /** Members' face photos. */
  readonly faceImages: FaceImages;
  /** Sheets and their values. */
  readonly sheets: Sheets;
  /** Files in the file parts of sheets. */
  readonly attachments: Attachments;
  /** Departments. */
  readonly departments: Departments;
  /** User accounts. */
  readonly users: Users;
  /** Roles of user accounts. */
  readonly roles: Roles;
  /** Extended access settings. */
  readonly advancedPermissions: AdvancedPermissions;
  /** Masters: the choices of choice fields. */
  readonly enumOptions: EnumOptions;
  /** Webhook settings. */
  readonly webhooks: Webhooks;
  /** Tasks, and waiting for one to end. */
  readonly tasks: Tasks;

  /** Checks the options (an invalid one throws OptionsError naming it); nothing is sent until the first call. */
  constructor(options: WdsClientOptions) {
    this.options = resolveOptions(options);
    const o = this.options;
    const meter = new WaitMeter();
    this.limiter = limiterFor(o, {
      defaultFile: () => defaultStateFile(o.consumerKey),
      windows: (limits) => ({ update: limits.update, request: limits.request, token: limits.token }),
      meter,
      onWait: (event) => {
        o.onWait?.(event);
        o.logger?.info(event.message);
      },
    });
    this.transport = new Transport(o, this.limiter, () => this.tokens, meter);
    const cache = tokenCacheOf(o.tokenCache, 'v2', o);
    this.tokens = new TokenManager(o.consumerKey, o.consumerSecret, (credentials) => this.transport.requestToken(credentials), o.tokenRenewBeforeMs, cache);
    this.members = new Members(this.transport);
    this.faceImages = new FaceImages(this.transport);
    this.sheets = new Sheets(this.transport);
    this.attachments = new Attachments(this.transport);
    this.departments = new Departments(this.transport);
    this.users = new Users(this.transport);
    this.roles = new Roles(this.transport);
    this.advancedPermissions = new AdvancedPermissions(this.transport);
    this.enumOptions = new EnumOptions(this.transport);
    this.webhooks = new Webhooks(this.transport);
    this.tasks = new Tasks(this.transport);
  }

  /**
   * One operation by its id (such as `members.list`), with tokens, limits and retries; the answer
   * is parsed with `schema` when one is given (the `wds-files api` command uses it).
   */
  call<T = unknown>(id: OperationId, call: CallOptions = {}, schema?: z.ZodType<T>): Promise<T> {
    return this.transport.call(id, call, schema);
  }

  /** Closes the client's connections (those of a `dispatcher` you gave stay open). */
  close(): Promise<void> {
    return this.transport.close();
  }
}
