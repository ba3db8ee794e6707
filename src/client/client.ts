/**
 * `WdsClient`: every operation of API v2 behind one transport that handles tokens, limits,
 * retries and dry-run (issue 3). The client knows nothing of files on disk.
 */
import { Limiter } from './limiter.js';
import { TokenManager } from './auth.js';
import { Transport, type CallOptions } from './transport.js';
import { resolveOptions, type ResolvedOptions, type WdsClientOptions } from './options.js';
import { StateFile, defaultStateFile } from './state-file.js';
import { WaitMeter } from './wait-meter.js';
import { Tasks } from './tasks.js';
import { Members } from './resources/members.js';
import { FaceImages } from './resources/face-images.js';
import { Sheets } from './resources/sheets.js';
import { Attachments } from './resources/attachments.js';
import { AdvancedPermissions, Departments, EnumOptions, Roles, Users, Webhooks } from './resources/organisation.js';
import type { OperationId } from '../spec/operations.js';
import type { z } from 'zod';

export class WdsClient {
  readonly options: ResolvedOptions;
  readonly limiter: Limiter | null;
  readonly tokens: TokenManager;
  readonly transport: Transport;
  readonly members: Members;
  readonly faceImages: FaceImages;
  readonly sheets: Sheets;
  readonly attachments: Attachments;
  readonly departments: Departments;
  readonly users: Users;
  readonly roles: Roles;
  readonly advancedPermissions: AdvancedPermissions;
  readonly enumOptions: EnumOptions;
  readonly webhooks: Webhooks;
  readonly tasks: Tasks;

  constructor(options: WdsClientOptions) {
    this.options = resolveOptions(options);
    const o = this.options;
    const stateFile = o.limits === false || o.stateFile === false ? null : new StateFile(o.stateFile ?? defaultStateFile(o.consumerKey));
    const meter = new WaitMeter();
    this.limiter = o.limits === false
      ? null
      : new Limiter({
          windows: { update: o.limits.update, request: o.limits.request, token: o.limits.token },
          marginRatio: o.limits.marginRatio,
          stateFile,
          meter,
          onWait: (event) => {
            o.onWait?.(event);
            o.logger?.info(event.message);
          },
        });
    this.transport = new Transport(o, this.limiter, () => this.tokens, meter);
    this.tokens = new TokenManager(o.consumerKey, o.consumerSecret, (credentials) => this.transport.requestToken(credentials), o.tokenRenewBeforeMs);
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

  /** One raw operation with auth, limits and retries (the `wds-files api` command uses it). */
  call<T = unknown>(id: OperationId, call: CallOptions = {}, schema?: z.ZodType<T>): Promise<T> {
    return this.transport.call(id, call, schema);
  }

  /** Closes the client's connections. */
  close(): Promise<void> {
    return this.transport.close();
  }
}
