/**
 * Reading a request body, for the v2 and legacy interfaces alike: at most a limit of bytes (413 as
 * soon as a body passes it, with or without Content-Length), within time bounds (408), and without
 * holding a large body in memory while it arrives.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { HttpError } from './http-error.js';

export interface BodyTimeouts {
  /** Real ms a body may pause between two pieces. */
  idleMs: number;
  /** Real ms the whole body may take, from the start of reading it. */
  totalMs: number;
}

/**
 * A minute without a byte (nginx's client_body_timeout), and a quarter of an hour for the whole
 * body: 250 MB in that time is 280 KB/s, slower than any link a real client uploads photos over.
 */
export const DEFAULT_BODY_TIMEOUTS: BodyTimeouts = { idleMs: 60_000, totalMs: 15 * 60_000 };

/** Bytes held in memory before the rest of a body goes to a temporary file. */
const SPILL_BYTES = 8 * 1024 * 1024;

/**
 * After an early answer (413, 408, 429, 503...) the client may still be sending its body. node:http
 * closes such a connection as soon as the answer is written, and closing with the client's bytes
 * unread makes the kernel send a reset that can reach the client before it has read the answer:
 * a refusal would look like a lost answer. So this connection closes the way RFC 9112 section 9.6
 * recommends: our side first, then the rest is read and dropped until the client pauses for a
 * second, 30 s at most (nginx's lingering_timeout and lingering_time work alike).
 */
export function closeLingering(req: IncomingMessage): void {
  if (req.complete) return;
  const socket = req.socket;
  socket.destroySoon = () => {
    socket.end();
    const idle = setTimeout(() => socket.destroy(), 1000);
    const cap = setTimeout(() => socket.destroy(), 30_000);
    idle.unref();
    cap.unref();
    const onData = (): void => void idle.refresh();
    req.on('data', onData);
    socket.once('close', () => {
      clearTimeout(idle);
      clearTimeout(cap);
      req.off('data', onData);
    });
  };
}

/**
 * Reads a whole body of at most `limit` bytes. Listeners rather than `for await`: leaving a
 * `for await` early destroys the request and its socket, and a client streaming an oversized body
 * would see a broken pipe instead of the 413 answer. Past the first 8 MB the body is written to a
 * temporary file and read back once it is whole, so a body refused at the limit, or one that
 * never ends, costs no memory for what it sent.
 */
export async function readBody(req: IncomingMessage, limit: number, timeouts: BodyTimeouts = DEFAULT_BODY_TIMEOUTS): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limit) {
    throw new HttpError(413, `the request body is ${declared} bytes, over the limit of ${limit} bytes (${limitText(limit)})`);
  }
  let spill: { path: string; stream: WriteStream } | undefined;
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      let chunks: Buffer[] = [];
      let held = 0;
      let total = 0;
      const fail = (error: HttpError): void => {
        stop();
        chunks = [];
        reject(error);
      };
      const timedOut = (what: string): void => fail(new HttpError(408, `the request body ${what}; send it again`, { Connection: 'close' }));
      const idle = setTimeout(() => timedOut(`paused for more than ${timeouts.idleMs / 1000} s`), timeouts.idleMs);
      const whole = setTimeout(() => timedOut(`took more than ${timeouts.totalMs / 1000} s to arrive`), timeouts.totalMs);
      const stop = (): void => {
        clearTimeout(idle);
        clearTimeout(whole);
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onError);
        req.off('close', onClose);
      };
      const onData = (chunk: Buffer): void => {
        idle.refresh();
        total += chunk.length;
        if (total > limit) {
          fail(new HttpError(413, `the request body is over the limit of ${limit} bytes (${limitText(limit)})`));
          return;
        }
        if (!spill && held + chunk.length <= SPILL_BYTES) {
          chunks.push(chunk);
          held += chunk.length;
          return;
        }
        if (!spill) {
          const path = join(tmpdir(), `wds-emulator-body-${randomUUID()}`);
          spill = { path, stream: createWriteStream(path, { mode: 0o600 }) };
          spill.stream.on('error', () => fail(new HttpError(500, 'the emulator could not keep the request body on disk')));
        }
        // The socket waits while the disk catches up, so no more than a stream buffer is in memory.
        if (!spill.stream.write(chunk)) {
          req.pause();
          spill.stream.once('drain', () => req.resume());
        }
      };
      const onEnd = (): void => {
        stop();
        if (!spill) return resolve(Buffer.concat(chunks, total));
        const { path, stream } = spill;
        // The body is read back straight behind the part held in memory: one buffer of its
        // size, not a copy of the file joined to a copy of the head.
        const body = Buffer.allocUnsafe(total);
        let at = 0;
        for (const chunk of chunks) at += chunk.copy(body, at);
        chunks = [];
        stream.end(() => {
          readInto(path, body, held).then(() => resolve(body), () => reject(new HttpError(500, 'the emulator could not read back the request body')));
        });
      };
      const onError = (): void => fail(new HttpError(400, 'the request body could not be read'));
      // A client that goes away mid-body leaves no one to answer; the handler just ends.
      const onClose = (): void => {
        if (!req.complete) fail(new HttpError(400, 'the request body ended before its end'));
      };
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('error', onError);
      req.on('close', onClose);
    });
  } finally {
    if (spill) {
      const { path, stream } = spill;
      stream.destroy();
      await rm(path, { force: true });
    }
  }
}

const limitText = (limit: number): string => (limit >= 1024 * 1024 ? `${Math.round(limit / 1024 / 1024)} MB` : `${Math.round(limit / 1024)} KB`);

async function readInto(path: string, body: Buffer, from: number): Promise<void> {
  const file = await open(path);
  try {
    for (let at = from; at < body.length;) {
      const { bytesRead } = await file.read(body, at, body.length - at, at - from);
      if (bytesRead === 0) throw new Error(`${path} ended early`);
      at += bytesRead;
    }
  } finally {
    await file.close();
  }
}
