/**
 * Bodies of the update requests (wire-format.md), streamed: each file is read when its turn in
 * the body comes, as base64 one chunk at a time, never a whole request in memory. The byte counts
 * match what is streamed, so the batch stage keeps every request within 250 MB.
 */
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { SourceFile } from '../sources/source.js';
import { base64Length, MAX_FILE_BYTES } from '../spec/limits.js';
import { jsonStringBytes } from './batch.js';

export const PHOTO_BODY_OVERHEAD = Buffer.byteLength('{"enable_trimming":false,"member_data":[]}');
export const ATTACHMENT_BODY_OVERHEAD = Buffer.byteLength('{"member_data":[]}');

/** Body bytes of one photo of `size` bytes for member `code`. */
export const photoItemBytes = (code: string, size: number): number =>
  Buffer.byteLength('{"code":,"base64_face_image":""}') + jsonStringBytes(code) + base64Length(size);

/** Body bytes of one file in its own member element: the worst case, so that a planned batch always fits. */
export const attachmentItemBytes = (code: string, fileName: string, size: number): number =>
  Buffer.byteLength('{"code":,"records":[{"file_name":,"base64_content":""}]}') + jsonStringBytes(code) + jsonStringBytes(fileName) + base64Length(size);

/**
 * Base64 of a stream, one piece per chunk read (up to 2 bytes carried to the next, so that the
 * pieces join into one base64 text): never the whole photo as one string and one more buffer.
 */
async function* base64Pieces(stream: Readable): AsyncGenerator<Buffer> {
  let rest = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const data = rest.length ? Buffer.concat([rest, chunk]) : chunk;
    const whole = data.length - (data.length % 3);
    if (whole) yield Buffer.from(data.subarray(0, whole).toString('base64'));
    rest = Buffer.from(data.subarray(whole));
  }
  if (rest.length) yield Buffer.from(rest.toString('base64'));
}

/** A photo of a register or update request: the converted JPEG when there is one, else the source's file. */
export interface BodyPhoto {
  code: string;
  file: SourceFile;
  tempPath?: string;
}

export async function* photoBody(items: BodyPhoto[], trimming: boolean): AsyncGenerator<Buffer> {
  yield Buffer.from(`{"enable_trimming":${trimming},"member_data":[`);
  for (const [i, item] of items.entries()) {
    yield Buffer.from(`${i ? ',' : ''}{"code":${JSON.stringify(item.code)},"base64_face_image":"`);
    const stream = item.tempPath ? createReadStream(item.tempPath) : await item.file.open();
    let sent = 0;
    for await (const piece of base64Pieces(stream)) {
      // A file grown past the limit since its check is not sent.
      sent += piece.length;
      if (sent > base64Length(MAX_FILE_BYTES)) throw new Error(`${item.file.where} is now over ${MAX_FILE_BYTES} bytes`);
      yield piece;
    }
    yield Buffer.from('"}');
  }
  yield Buffer.from(']}');
}

export interface BodyAttachment {
  code: string;
  fileName: string;
  file: SourceFile;
}

export async function* attachmentBody(items: BodyAttachment[]): AsyncGenerator<Buffer> {
  yield Buffer.from('{"member_data":[');
  for (const [i, item] of items.entries()) {
    const data = await item.file.read(MAX_FILE_BYTES);
    yield Buffer.from(`${i ? ',' : ''}{"code":${JSON.stringify(item.code)},"records":[{"file_name":${JSON.stringify(item.fileName)},"base64_content":"`);
    yield Buffer.from(data.toString('base64'));
    yield Buffer.from('"}]}');
  }
  yield Buffer.from(']}');
}
