/**
 * The image checker's process (photo-checker.ts): loads sharp, says it is ready, then checks each
 * photo it is sent (bytes, or a file on disk that it reads) and answers with the verdict. A converted JPEG goes to the file the request
 * names; the bytes to send never come back (the import reads them from disk when it sends).
 */
import './photo-check-signals.js';
import { createHash } from 'node:crypto';
import { tuneMemory } from '../../../util/runtime.js';
import { readDiskFile } from '../../../sources/folder.js';
import { GONE_REASON, isGone } from '../../../sources/file-rules.js';
import { checkPhoto } from './photo-check.js';
import { MAX_PHOTO_SOURCE_BYTES, type CheckInput, type CheckReply, type CheckRequest, type CheckVerdict } from './photo-checker.js';

tuneMemory();

const send = (message: CheckReply | { ready: true }): void => {
  process.send?.(message);
};

/** The photo's bytes, read here with the folder source's rules when it is a file on disk; else why not. */
async function bytesOf(input: CheckInput): Promise<Buffer | Extract<CheckVerdict, { ok: false }>> {
  if (input instanceof Uint8Array) return Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  try {
    return await readDiskFile(input.path, input.size, MAX_PHOTO_SOURCE_BYTES);
  } catch (error) {
    return isGone(error) ? { ok: false, reason: GONE_REASON, gone: true } : { ok: false, reason: (error as Error).message };
  }
}

async function check(message: CheckRequest): Promise<CheckVerdict> {
  const data = await bytesOf(message.input);
  if (!Buffer.isBuffer(data)) return data;
  const result = await checkPhoto(data, { normalize: message.normalize, output: message.output });
  if (!result.ok) return result;
  const { data: _bytes, ...verdict } = result;
  return { ...verdict, sha256: createHash('sha256').update(data).digest('hex') };
}

process.on('message', (message: CheckRequest) => {
  check(message).then(
    (result) => send({ id: message.id, result }),
    (error: unknown) => send({ id: message.id, error: (error as Error).message }),
  );
});
// The import closes the channel when it is done with the checker: nothing else keeps it alive.
process.on('disconnect', () => process.exit(0));
// An import killed while this process was starting closed the channel before anyone listened.
if (!process.connected) process.exit(0);
send({ ready: true });
