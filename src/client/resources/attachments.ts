/** Attachments, the file parts of sheets (api-v2.md 4.4 Sheets 6-9; wire-format.md, Attachments). */
import { attachmentListSchema, type AttachmentListEntry } from '../../spec/schemas.js';
import type { Transport } from '../transport.js';
import type { ListOptions } from './face-images.js';
import { bodyOf, submitTask, type StreamedBody, type TaskRef, type UpdateOptions } from './common.js';

/** One member's files for a file part, as sent. */
export interface AttachmentMemberInput {
  /** The member's code. */
  code: string;
  /** The member's files. */
  records: AttachmentFileInput[];
}

/** One file as sent. */
export interface AttachmentFileInput {
  /** The file's name at the service. */
  file_name: string;
  /** The file's bytes as standard padded base64, without a `data:` prefix. */
  base64_content: string;
}

/** Attachments: the files held in the file parts (file fields) of sheets. Reach it as `client.attachments`. */
export class Attachments {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** The files of one file part as download URLs, valid 15 minutes; only records holding a file. */
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

  /** `list` handed over one member's entry at a time as the answer arrives (see `faceImages.each`). */
  async each(sheetId: number, fieldId: number, onEntry: (entry: AttachmentListEntry) => void, options: ListOptions & { start?: (headers: Record<string, string | string[] | undefined>) => void } = {}): Promise<void> {
    await this.t.call(
      'attachments.list',
      {
        params: { sheet_id: sheetId, custom_field_id: fieldId },
        query: { updated_since: options.updatedSince }, signal: options.signal, onHeaders: options.onHeaders,
        items: { key: 'member_data', start: (headers) => options.start?.(headers), item: (entry) => onEntry(entry as AttachmentListEntry) },
      },
      attachmentListSchema,
    );
  }

  /**
   * Adds files: at most 1,000 files of 5 MB each and 250 MB in all per request; a name must not be
   * one the member already holds in that file part.
   */
  register(sheetId: number, fieldId: number, members: AttachmentMemberInput[] | StreamedBody, options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'attachments.register', { params: { sheet_id: sheetId, custom_field_id: fieldId }, ...bodyOf(members, (list) => ({ member_data: list })), ...options });
  }

  /** Replaces each member's file of the same name, with the same limits as `register`. */
  update(sheetId: number, fieldId: number, members: AttachmentMemberInput[] | StreamedBody, options: UpdateOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'attachments.update', { params: { sheet_id: sheetId, custom_field_id: fieldId }, ...bodyOf(members, (list) => ({ member_data: list })), ...options });
  }
}
