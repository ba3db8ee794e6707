/** Face images (api-v2.md 4.4 Members 6-7; wire-format.md, Face images). */
import { faceImageListSchema, type FaceImageListEntry } from '../../spec/schemas.js';
import type { CallOptions, Transport } from '../transport.js';
import { submitTask, type TaskRef, type UpdateOptions } from './common.js';

export interface FaceImageItem {
  code: string;
  /** Standard padded base64 of the file bytes, without a `data:` prefix. */
  base64_face_image: string;
}

/** Options of the URL listings. */
export interface ListOptions {
  /** Only files updated on or after this date, `YYYY-MM-DD`. */
  updatedSince?: string;
  signal?: AbortSignal;
  onHeaders?: CallOptions['onHeaders'];
}

export interface FaceImageWriteOptions extends UpdateOptions {
  /** Trim to the face (`enable_trimming`). Default true, as the service. */
  trimming?: boolean;
}

export class FaceImages {
  constructor(private readonly t: Transport) {}

  /** Download URLs of the photos, valid 15 minutes; `updatedSince` is a date `YYYY-MM-DD`. */
  async list(options: ListOptions = {}): Promise<FaceImageListEntry[]> {
    const answer = await this.t.call(
      'faceImages.list',
      { query: { updated_since: options.updatedSince }, signal: options.signal, onHeaders: options.onHeaders },
      faceImageListSchema,
    );
    return answer.member_data;
  }

  /** Only for members without a photo. At most 100 members per request. */
  register(items: FaceImageItem[], options: FaceImageWriteOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'faceImages.register', { body: { enable_trimming: options.trimming ?? true, member_data: items }, ...options });
  }

  /** Only for members with a photo. At most 100 members per request. */
  update(items: FaceImageItem[], options: FaceImageWriteOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'faceImages.update', { body: { enable_trimming: options.trimming ?? true, member_data: items }, ...options });
  }
}
