/**
 * Bodies of the update requests (wire-format.md), streamed: each file is read when its turn in
 * the body comes, as base64 one chunk at a time, never a whole request in memory. The byte counts
 * match what is streamed, so the batch stage keeps every request within 250 MB.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { BodyItemError } from '../../client/errors.js';
import type { SourceFile } from '../../sources/source.js';
import { base64Length, MAX_FILE_BYTES } from '../../spec/limits.js';
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
async function* base64Pieces(stream: Readable, hash?: Hash): AsyncGenerator<Buffer> {
  let rest = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    hash?.update(chunk);
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
  /** The sha256 of the source's bytes as checked. */
  sha256: string;
  tempPath?: string;
}

/**
 * The source's bytes are hashed as they stream, and a file that is not what was checked (edited,
 * replaced or gone since) cuts the request off before it is complete: otherwise unchecked bytes
 * would be sent and the journal would take the checked ones as applied.
 */
export async function* photoBody(items: BodyPhoto[], trimming: boolean): AsyncGenerator<Buffer> {
  yield Buffer.from(`{"enable_trimming":${trimming},"member_data":[`);
  for (const [i, item] of items.entries()) {
    yield Buffer.from(`${i ? ',' : ''}{"code":${JSON.stringify(item.code)},"base64_face_image":"`);
    // The converted JPEG is the tool's own file, made from the bytes checked.
    const hash = item.tempPath ? undefined : createHash('sha256');
    const stream = item.tempPath ? createReadStream(item.tempPath) : await reopened(i, item.file);
    let sent = 0;
    try {
      for await (const piece of base64Pieces(stream, hash)) {
        sent += piece.length;
        if (sent > base64Length(MAX_FILE_BYTES)) throw new BodyItemError(i, changed(item.file, `is now over ${MAX_FILE_BYTES} bytes`));
        yield piece;
      }
    } catch (error) {
      throw error instanceof BodyItemError ? error : new BodyItemError(i, changed(item.file, `could not be read again: ${(error as Error).message}`));
    }
    if (hash && hash.digest('hex') !== item.sha256) throw new BodyItemError(i, changed(item.file, 'changed since its check'));
    yield Buffer.from('"}');
  }
  yield Buffer.from(']}');
}

export interface BodyAttachment {
  code: string;
  fileName: string;
  file: SourceFile;
  /** The sha256 of the file's bytes as checked. */
  sha256: string;
}

/** As {@link photoBody}, a file that is not what was checked cuts the request off. */
export async function* attachmentBody(items: BodyAttachment[]): AsyncGenerator<Buffer> {
  yield Buffer.from('{"member_data":[');
  for (const [i, item] of items.entries()) {
    let data: Buffer;
    try {
      data = await item.file.read(MAX_FILE_BYTES);
    } catch (error) {
      throw new BodyItemError(i, changed(item.file, `could not be read again: ${(error as Error).message}`));
    }
    if (createHash('sha256').update(data).digest('hex') !== item.sha256) throw new BodyItemError(i, changed(item.file, 'changed since its check'));
    yield Buffer.from(`${i ? ',' : ''}{"code":${JSON.stringify(item.code)},"records":[{"file_name":${JSON.stringify(item.fileName)},"base64_content":"`);
    yield Buffer.from(data.toString('base64'));
    yield Buffer.from('"}]}');
  }
  yield Buffer.from(']}');
}

async function reopened(index: number, file: SourceFile): Promise<Readable> {
  try {
    return await file.open();
  } catch (error) {
    throw new BodyItemError(index, changed(file, `could not be read again: ${(error as Error).message}`));
  }
}

const changed = (file: SourceFile, what: string): string =>
  `${file.where} ${what}: not sent, so that only checked bytes go; run again to check and send it as it is now`;
