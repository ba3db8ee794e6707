/** Members (api-v2.md 4.4 Members 1-5; wire-format.md, Members). */
import { membersAnswerSchema, memberLayoutSchema, type Member, type MemberInput } from '../../spec/schemas.js';
import type { Transport } from '../transport.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

export class Members {
  constructor(private readonly t: Transport) {}

  /** Members as the service answers them: with `age`, `years_of_service` and department names. */
  list(options: { signal?: AbortSignal } = {}): Promise<{ updated_at?: string | null; member_data: Member[] }> {
    return this.t.call('members.list', { signal: options.signal }, membersAnswerSchema);
  }

  layout(options: { getCalcType?: boolean } = {}): Promise<Record<string, unknown>> {
    return this.t.call('members.layout', { query: { get_calc_type: options.getCalcType } }, memberLayoutSchema);
  }

  register(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.register', { body: { member_data: members }, ...options });
  }

  /** Every member: information absent from the body is deleted (4.4 Members 2). */
  bulkUpdate(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.bulkUpdate', { body: { member_data: members }, ...options });
  }

  /** Only the values sent change; an empty string clears (4.4 Members 3). */
  partialUpdate(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.partialUpdate', { body: { member_data: members }, ...options });
  }

  /** Unknown codes are registered, known updated, known codes absent deleted (4.4 Members 4). */
  replaceAll(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.replaceAll', { body: { member_data: members }, ...options });
  }

  delete(codes: string[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.delete', { body: { codes }, ...options });
  }
}
