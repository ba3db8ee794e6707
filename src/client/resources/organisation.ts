/**
 * Departments, users, roles, extended access settings, masters (choice lists) and webhook
 * settings (api-v2.md 4.4; wire-format.md, last sections).
 */
import {
  advancedPermissionsSchema, departmentsSchema, enumOptionFieldSchema, enumOptionsAnswerSchema, rolesAnswerSchema,
  userSchema, usersAnswerSchema, webhookSchema, webhooksAnswerSchema,
  type AdvancedPermission, type Department, type EnumOptionField, type Role, type User, type Webhook,
} from '../../spec/schemas.js';
import type { AdvancedType } from '../../spec/operations.js';
import { registerSecret } from '../../util/redact.js';
import type { Transport } from '../transport.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

export type { AdvancedPermission, Department, Role };

/** The company's departments, as one tree. Reach it as `client.departments`. */
export class Departments {
  /** @internal */
  constructor(private readonly t: Transport) {}
  /** Every department, with its parent's code. */
  async list(): Promise<Department[]> {
    return (await this.t.call('departments.list', {}, departmentsSchema)).department_data;
  }
  /** The whole tree: departments absent from the body are deleted. */
  bulkUpdate(departments: Department[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'departments.bulkUpdate', { body: { department_data: departments }, ...options });
  }
}

/** A user account as sent: what `register` needs, or what `update` changes. */
export interface UserInput {
  /** The login address. */
  email?: string;
  /** The member the account belongs to. */
  member_code?: string;
  /** The password; it never appears in logs, errors or reports. */
  password?: string;
  /** The role, by its id (see `client.roles.list()`). */
  role?: {
    /** The role's id. */
    id: number;
  };
  /** Whether the account is in use (false: stopped). */
  is_active?: boolean;
  /** Whether the password is locked. */
  password_locked?: boolean;
  /** Whether the account may use a smartphone browser. */
  use_smartphone?: boolean;
  /** Whether the account may use the smartphone application. */
  use_native_app?: boolean;
}

/** User accounts. Reach it as `client.users`. */
export class Users {
  /** @internal */
  constructor(private readonly t: Transport) {}
  /** Every user account. */
  async list(): Promise<User[]> {
    return (await this.t.call('users.list', {}, usersAnswerSchema)).user_data;
  }
  /** One user account, by its id. */
  get(id: number): Promise<User> {
    return this.t.call('users.get', { params: { user_id: id } }, userSchema);
  }
  /** Creates an account: email, member code, password and role are required. Answers the account at once (no task). */
  register(user: UserInput & Required<Pick<UserInput, 'email' | 'member_code' | 'password' | 'role'>>, options: UpdateOptions = {}): Promise<User> {
    registerSecret(user.password);
    return this.t.call('users.register', { body: user, ...options }, userSchema);
  }
  /** Changes only the values given. Answers the account at once (no task). */
  update(id: number, user: UserInput, options: UpdateOptions = {}): Promise<User> {
    registerSecret(user.password);
    return this.t.call('users.update', { params: { user_id: id }, body: user, ...options }, userSchema);
  }
  /** Deletes the account (not the member). */
  async delete(id: number, options: UpdateOptions = {}): Promise<void> {
    await this.t.call('users.delete', { params: { user_id: id }, ...options });
  }
}

/** Roles that user accounts can have. Reach it as `client.roles`. */
export class Roles {
  /** @internal */
  constructor(private readonly t: Transport) {}
  /** Every role. */
  async list(): Promise<Role[]> {
    return (await this.t.call('roles.list', {}, rolesAnswerSchema)).role_data;
  }
}

/**
 * Extended access settings: members or departments added to, or excluded from, what each user
 * may see. Reach it as `client.advancedPermissions`.
 */
export class AdvancedPermissions {
  /** @internal */
  constructor(private readonly t: Transport) {}
  /** Every user's settings of one type (`member` or `department`). */
  async list(type: AdvancedType): Promise<AdvancedPermission[]> {
    return (await this.t.call('advancedPermissions.list', { params: { advanced_type: type } }, advancedPermissionsSchema)).advanced_permission_data;
  }
  /** Swaps every setting of the type for `data`. This operation has no dry-run mode. */
  replace(type: AdvancedType, data: AdvancedPermission[], options: { signal?: AbortSignal } = {}): Promise<TaskRef> {
    return submitTask(this.t, 'advancedPermissions.replace', { params: { advanced_type: type }, body: { advanced_permission_data: data }, dryRun: false, ...options });
  }
}

/** Masters: the choices of choice fields. Reach it as `client.enumOptions`. */
export class EnumOptions {
  /** @internal */
  constructor(private readonly t: Transport) {}
  /** Every choice field with its choices. */
  async list(): Promise<EnumOptionField[]> {
    return (await this.t.call('enumOptions.list', {}, enumOptionsAnswerSchema)).custom_field_data;
  }
  /** One choice field with its choices. */
  get(fieldId: number): Promise<EnumOptionField> {
    return this.t.call('enumOptions.get', { params: { custom_field_id: fieldId } }, enumOptionFieldSchema);
  }
  /** The field's whole list of choices: choices absent are deleted, those without an id added, in the order given. */
  update(fieldId: number, options: { id?: number; name: string }[], update: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'enumOptions.update', { params: { custom_field_id: fieldId }, body: { enum_option_data: options }, ...update });
  }
}

/** A webhook setting as sent. */
export interface WebhookInput {
  /** Where the service delivers the events. */
  url: string;
  /** The member events to deliver. */
  events: ('member_created' | 'member_updated' | 'member_deleted')[];
  /** Sent back in the `Service-Token` header of each delivery, for the receiver to check; never shown in logs or errors. */
  secret_token?: string;
}

/** Webhook settings (at most 10). Reach it as `client.webhooks`. */
export class Webhooks {
  /** @internal */
  constructor(private readonly t: Transport) {}
  /** Every webhook setting. */
  async list(): Promise<Webhook[]> {
    const hooks = (await this.t.call('webhooks.list', {}, webhooksAnswerSchema)).webhook_data;
    for (const hook of hooks) registerSecret(hook.secret_token);
    return hooks;
  }
  /** Adds a webhook setting and answers it at once (no task). */
  register(hook: WebhookInput, options: UpdateOptions = {}): Promise<Webhook> {
    registerSecret(hook.secret_token);
    return this.t.call('webhooks.register', { body: hook, ...options }, webhookSchema);
  }
  /** Replaces a webhook setting and answers it at once (no task). */
  update(id: number, hook: WebhookInput, options: UpdateOptions = {}): Promise<Webhook> {
    registerSecret(hook.secret_token);
    return this.t.call('webhooks.update', { params: { webhook_id: id }, body: hook, ...options }, webhookSchema);
  }
  /** Removes a webhook setting. */
  async delete(id: number, options: UpdateOptions = {}): Promise<void> {
    await this.t.call('webhooks.delete', { params: { webhook_id: id }, ...options });
  }
}
