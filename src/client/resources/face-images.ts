/** Face images (api-v2.md 4.4 Members 6-7; wire-format.md, Face images). */
import { faceImageListSchema, type FaceImageListEntry } from '../../spec/schemas.js';
import type { CallOptions, Transport } from '../transport.js';
import { bodyOf, submitTask, type StreamedBody, type TaskRef, type UpdateOptions } from './common.js';

/** One member's photo, as sent. */
export interface FaceImageItem {
  /** The member's code. */
  code: string;
  /** Standard padded base64 of the file bytes, without a `data:` prefix. */
  base64_face_image: string;
}

/** Options of the URL listings. */
export interface ListOptions {
  /** Only files updated on or after this date, `YYYY-MM-DD`. Default: every file. */
  updatedSince?: string;
  /** Stops the request. */
  signal?: AbortSignal;
  /** Sees the answer's headers (its `Date` tells when the download URLs were made). */
  onHeaders?: CallOptions['onHeaders'];
}

/** Options of `faceImages.register` and `faceImages.update`. */
export interface FaceImageWriteOptions extends UpdateOptions {
  /** Let the service trim the photo to the face. Default true, as the service. */
  trimming?: boolean;
}

/** Members' face photos. Reach it as `client.faceImages`. */
export class FaceImages {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** Every member's photo as a download URL, valid 15 minutes; only members with a photo. */
  async list(options: ListOptions = {}): Promise<FaceImageListEntry[]> {
    const answer = await this.t.call(
      'faceImages.list',
      { query: { updated_since: options.updatedSince }, signal: options.signal, onHeaders: options.onHeaders },
      faceImageListSchema,
    );
    return answer.member_data;
  }

  /**
   * `list` handed over one entry at a time as the answer arrives, never held whole: for listings of
   * many thousand photos. `start` is called before the first entry, and again should the answer
   * be asked for again after a read cut short (its entries then come again from the first).
   */
  async each(onEntry: (entry: FaceImageListEntry) => void, options: ListOptions & { start?: (headers: Record<string, string | string[] | undefined>) => void } = {}): Promise<void> {
    await this.t.call(
      'faceImages.list',
      {
        query: { updated_since: options.updatedSince }, signal: options.signal, onHeaders: options.onHeaders,
        items: { key: 'member_data', start: (headers) => options.start?.(headers), item: (entry) => onEntry(entry as FaceImageListEntry) },
      },
      faceImageListSchema,
    );
  }

  /**
   * Adds photos of members without one: at most 100 photos of 5 MB (jpg, gif or png) per request.
   * A streamed body carries `enable_trimming` itself, so `trimming` is not read then.
   */
  register(items: FaceImageItem[] | StreamedBody, options: FaceImageWriteOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'faceImages.register', { ...bodyOf(items, (list) => ({ enable_trimming: options.trimming ?? true, member_data: list })), ...options });
  }

  /** Replaces photos of members with one: at most 100 photos of 5 MB (jpg, gif or png) per request. */
  update(items: FaceImageItem[] | StreamedBody, options: FaceImageWriteOptions = {}): Promise<TaskRef> {
    return submitTask(this.t, 'faceImages.update', { ...bodyOf(items, (list) => ({ enable_trimming: options.trimming ?? true, member_data: list })), ...options });
  }
}
