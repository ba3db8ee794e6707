/** Members (api-v2.md 4.4 Members 1-5; wire-format.md, Members). */
import { membersAnswerSchema, memberLayoutSchema, type Member, type MemberInput } from '../../spec/schemas.js';
import type { Transport } from '../transport.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

/** Every member, as `members.list()` answers. */
export interface MemberList {
  /** When the member data last changed, `YYYY-MM-DD HH:MM:SS`. */
  updated_at?: string | null;
  /** The members. */
  member_data: Member[];
}

/** Members: list, layout, and the four ways of changing them. Reach it as `client.members`. */
export class Members {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** Members as the service answers them: with `age`, `years_of_service` and department names. */
  list(options: { signal?: AbortSignal } = {}): Promise<MemberList> {
    return this.t.call('members.list', { signal: options.signal }, membersAnswerSchema);
  }

  /**
   * Each member of the same answer as `list`, read entry by entry and never held whole: what
   * needs only some of each member (its code) keeps memory flat in a company of many thousands.
   */
  async each(onEntry: (member: Member) => void, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.t.call(
      'members.list',
      { signal: options.signal, items: { key: 'member_data', start: () => undefined, item: (entry) => onEntry(entry as Member) } },
      membersAnswerSchema,
    );
  }

  /** The member fields and their types; `getCalcType: true` includes the formula fields (default false). */
  layout(options: { getCalcType?: boolean } = {}): Promise<Record<string, unknown>> {
    return this.t.call('members.layout', { query: { get_calc_type: options.getCalcType } }, memberLayoutSchema);
  }

  /** Registers new members (unknown codes); follow the task with `client.tasks.wait`. */
  register(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.register', { body: { member_data: members }, ...options });
  }

  /** Updates every member given as a whole: information absent from a member is deleted. */
  bulkUpdate(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.bulkUpdate', { body: { member_data: members }, ...options });
  }

  /** Changes only the values sent; an empty string clears a value. */
  partialUpdate(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.partialUpdate', { body: { member_data: members }, ...options });
  }

  /** The whole member list: unknown codes are registered, known ones updated, and members absent deleted. */
  replaceAll(members: MemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.replaceAll', { body: { member_data: members }, ...options });
  }

  /** Deletes the members with these codes. */
  delete(codes: string[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'members.delete', { body: { codes }, ...options });
  }
}
