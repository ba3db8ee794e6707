/**
 * The hashing thread of hash-file.ts: the SHA-256 and size of each file it is sent, read with
 * synchronous calls in blocks of 1 MB (this thread does nothing else), answered under the
 * request's id, or with the error that reading met.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

export interface HashRequest {
  id: number;
  path: string;
}

export interface HashReply {
  id: number;
  sha256?: string;
  size?: number;
  error?: { message: string; code?: string };
}

if (!parentPort) throw new Error('hash-worker.ts runs as the hashing thread of hash-file.ts');
const port = parentPort;
const buffer = Buffer.allocUnsafe(1 << 20);

port.on('message', ({ id, path }: HashRequest) => {
  let fd = -1;
  try {
    fd = openSync(path, 'r');
    const hash = createHash('sha256');
    let size = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
      size += n;
    }
    port.postMessage({ id, sha256: hash.digest('hex'), size } satisfies HashReply);
  } catch (error) {
    const { message, code } = error as NodeJS.ErrnoException;
    port.postMessage({ id, error: { message, code } } satisfies HashReply);
  } finally {
    if (fd >= 0) closeSync(fd);
  }
});
