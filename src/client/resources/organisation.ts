/**
 * Departments, users, roles, extended access settings, masters and webhook settings
 * (api-v2.md 4.4; wire-format.md, last sections).
 */
import { z } from 'zod';
import {
  advancedPermissionsSchema, departmentsSchema, enumOptionFieldSchema, enumOptionsAnswerSchema, rolesAnswerSchema,
  userSchema, usersAnswerSchema, webhookSchema, webhooksAnswerSchema, type User, type Webhook,
} from '../../spec/schemas.js';
import type { AdvancedType } from '../../spec/operations.js';
import { registerSecret } from '../../util/redact.js';
import type { Transport } from '../transport.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

type Department = z.infer<typeof departmentsSchema>['department_data'][number];

export class Departments {
  constructor(private readonly t: Transport) {}
  async list(): Promise<Department[]> {
    return (await this.t.call('departments.list', {}, departmentsSchema)).department_data;
  }
  /** The whole tree: departments absent from the body are deleted. */
  bulkUpdate(departments: Department[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'departments.bulkUpdate', { body: { department_data: departments }, ...options });
  }
}

export interface UserInput {
  email?: string;
  member_code?: string;
  password?: string;
  role?: { id: number };
  is_active?: boolean;
  password_locked?: boolean;
  use_smartphone?: boolean;
  use_native_app?: boolean;
}

export class Users {
  constructor(private readonly t: Transport) {}
  async list(): Promise<User[]> {
    return (await this.t.call('users.list', {}, usersAnswerSchema)).user_data;
  }
  get(id: number): Promise<User> {
    return this.t.call('users.get', { params: { user_id: id } }, userSchema);
  }
  register(user: UserInput & Required<Pick<UserInput, 'email' | 'member_code' | 'password' | 'role'>>, options: UpdateOptions = {}): Promise<User> {
    registerSecret(user.password);
    return this.t.call('users.register', { body: user, ...options }, userSchema);
  }
  update(id: number, user: UserInput, options: UpdateOptions = {}): Promise<User> {
    registerSecret(user.password);
    return this.t.call('users.update', { params: { user_id: id }, body: user, ...options }, userSchema);
  }
  async delete(id: number, options: UpdateOptions = {}): Promise<void> {
    await this.t.call('users.delete', { params: { user_id: id }, ...options });
  }
}

export class Roles {
  constructor(private readonly t: Transport) {}
  async list(): Promise<z.infer<typeof rolesAnswerSchema>['role_data']> {
    return (await this.t.call('roles.list', {}, rolesAnswerSchema)).role_data;
  }
}

type AdvancedPermission = z.infer<typeof advancedPermissionsSchema>['advanced_permission_data'][number];

export class AdvancedPermissions {
  constructor(private readonly t: Transport) {}
  async list(type: AdvancedType): Promise<AdvancedPermission[]> {
    return (await this.t.call('advancedPermissions.list', { params: { advanced_type: type } }, advancedPermissionsSchema)).advanced_permission_data;
  }
  /** Swaps every setting of the type for `data`. This operation has no dry-run mode. */
  replace(type: AdvancedType, data: AdvancedPermission[], options: { signal?: AbortSignal } = {}): Promise<TaskRef> {
    return submitTask(this.t, 'advancedPermissions.replace', { params: { advanced_type: type }, body: { advanced_permission_data: data }, dryRun: false, ...options });
  }
}

export class EnumOptions {
  constructor(private readonly t: Transport) {}
  async list(): Promise<z.infer<typeof enumOptionFieldSchema>[]> {
    return (await this.t.call('enumOptions.list', {}, enumOptionsAnswerSchema)).custom_field_data;
  }
  get(fieldId: number): Promise<z.infer<typeof enumOptionFieldSchema>> {
    return this.t.call('enumOptions.get', { params: { custom_field_id: fieldId } }, enumOptionFieldSchema);
  }
  /** Masters absent are deleted, those without id added, order as given (4.4 Masters 2). */
  update(fieldId: number, options: { id?: number; name: string }[], update: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'enumOptions.update', { params: { custom_field_id: fieldId }, body: { enum_option_data: options }, ...update });
  }
}

export interface WebhookInput {
  url: string;
  events: ('member_created' | 'member_updated' | 'member_deleted')[];
  secret_token?: string;
}

export class Webhooks {
  constructor(private readonly t: Transport) {}
  async list(): Promise<Webhook[]> {
    const hooks = (await this.t.call('webhooks.list', {}, webhooksAnswerSchema)).webhook_data;
    for (const hook of hooks) registerSecret(hook.secret_token);
    return hooks;
  }
  register(hook: WebhookInput, options: UpdateOptions = {}): Promise<Webhook> {
    registerSecret(hook.secret_token);
    return this.t.call('webhooks.register', { body: hook, ...options }, webhookSchema);
  }
  update(id: number, hook: WebhookInput, options: UpdateOptions = {}): Promise<Webhook> {
    registerSecret(hook.secret_token);
    return this.t.call('webhooks.update', { params: { webhook_id: id }, body: hook, ...options }, webhookSchema);
  }
  async delete(id: number, options: UpdateOptions = {}): Promise<void> {
    await this.t.call('webhooks.delete', { params: { webhook_id: id }, ...options });
  }
}
