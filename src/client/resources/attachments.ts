/** Attachments, the file parts of sheets (api-v2.md 4.4 Sheets 6-9; wire-format.md, Attachments). */
import { attachmentListSchema, type AttachmentListEntry } from '../../spec/schemas.js';
import type { Transport } from '../transport.js';
import type { ListOptions } from './face-images.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

export interface AttachmentMemberInput {
  code: string;
  records: { file_name: string; base64_content: string }[];
}

export class Attachments {
  constructor(private readonly t: Transport) {}

  /** Download URLs of the files of one file part, valid 15 minutes; only records holding a file. */
  async list(sheetId: number, fieldId: number, options: ListOptions = {}): Promise<AttachmentListEntry[]> {
    const answer = await this.t.call(
      'attachments.list',
      {
        params: { sheet_id: sheetId, custom_field_id: fieldId },
        query: { updated_since: options.updatedSince },
        signal: options.signal,
        onHeaders: options.onHeaders,
      },
      attachmentListSchema,
    );
    return answer.member_data;
  }

  /** At most 1,000 files and 250 MB per request; names must not repeat the member's (4.4 Sheets 7). */
  register(sheetId: number, fieldId: number, members: AttachmentMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'attachments.register', { params: { sheet_id: sheetId, custom_field_id: fieldId }, body: { member_data: members }, ...options });
  }

  /** Replaces the file of the same name (4.4 Sheets 8). */
  update(sheetId: number, fieldId: number, members: AttachmentMemberInput[], options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'attachments.update', { params: { sheet_id: sheetId, custom_field_id: fieldId }, body: { member_data: members }, ...options });
  }
}
