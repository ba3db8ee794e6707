/** Users (operations 2 to 4) and departments (5 to 7) of the legacy interface. */
import { departmentListSchema, userListSchema, type LegacyDepartment, type LegacyDepartmentList, type LegacyUserList } from './schemas.js';
import { postUpdate } from './updates.js';
import { registerSecret } from '../../util/redact.js';
import type { LegacyTransport } from './transport.js';
import type { LegacyReadOptions, LegacyUpdate, LegacyUpdateOptions, LegacyUserInput } from './types.js';

/** A service that quotes a refused value in its errors must not show a password sent. */
function hidePasswords(users: LegacyUserInput[]): void {
  for (const user of users) registerSecret(user.password);
}

/** User accounts. Reach it as `legacyClient.users`. */
export class LegacyUsers {
  /** @internal */
  constructor(private readonly transport: LegacyTransport) {}

  /** Every user account (operation 2), passwords masked as `****`, with the label of each field. */
  list(options: LegacyReadOptions = {}): Promise<LegacyUserList> {
    return this.transport.postParsed('user', userListSchema, { signal: options.signal });
  }

  /** Replaces all user accounts with `users` (operation 3): accounts absent from it are deleted. */
  overwrite(users: LegacyUserInput[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    hidePasswords(users);
    return postUpdate(this.transport, 'user/overwrite', { users }, options);
  }

  /** Adds user accounts (operation 4); the others stay as they are. */
  add(users: LegacyUserInput[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    hidePasswords(users);
    return postUpdate(this.transport, 'user/add', { users }, options);
  }
}

/** Departments. Reach it as `legacyClient.departments`. */
export class LegacyDepartments {
  /** @internal */
  constructor(private readonly transport: LegacyTransport) {}

  /** Every department (operation 5), each as its path of codes and names, root first. */
  async list(options: LegacyReadOptions = {}): Promise<LegacyDepartmentList> {
    const answer = await this.transport.postParsed('department', departmentListSchema, { signal: options.signal });
    return answer as LegacyDepartmentList;
  }

  /** Replaces all departments with `departments` (operation 6): departments absent from it are deleted. */
  overwrite(departments: LegacyDepartment[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    return postUpdate(this.transport, 'department/overwrite', { departments }, options);
  }

  /** Adds departments (operation 7); the others stay as they are. */
  add(departments: LegacyDepartment[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    return postUpdate(this.transport, 'department/add', { departments }, options);
  }
}
