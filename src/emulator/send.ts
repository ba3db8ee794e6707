/**
 * Writes an answer body with the faults of DESIGN.md section 6 applied: a bandwidth limit per
 * connection, a connection cut mid-body (reset) and a body shorter than its Content-Length
 * (truncate). The emulator is plain node:http so that it controls these exactly.
 */
import type { ServerResponse } from 'node:http';
import type { FaultDecision } from './faults.js';

export interface SendOptions {
  /** Bytes per second; 0 or absent for no limit. */
  bandwidth?: number;
  fault?: FaultDecision;
  /** HEAD: headers only. */
  headOnly?: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves with the number of body bytes written. */
export async function sendBody(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number>,
  body: Buffer,
  options: SendOptions = {},
): Promise<number> {
  res.writeHead(status, { ...headers, 'Content-Length': body.length });
  if (options.headOnly) {
    res.end();
    return 0;
  }
  const fault = options.fault?.kind;
  // A cut or truncated body stops somewhere in its middle.
  const stopAt = fault === 'reset' || fault === 'truncate' ? Math.floor(body.length / 2) : body.length;
  const bandwidth = options.bandwidth ?? 0;
  let written = 0;
  if (!bandwidth) {
    if (stopAt === body.length) {
      res.end(body);
      return body.length;
    }
    await write(res, body.subarray(0, stopAt));
    written = stopAt;
  } else {
    // Slices of a twentieth of a second each, so a slow connection still streams steadily.
    const slice = Math.max(1024, Math.floor(bandwidth / 20));
    const started = Date.now();
    while (written < stopAt && !res.destroyed) {
      const end = Math.min(stopAt, written + slice);
      await write(res, body.subarray(written, end));
      written = end;
      const due = started + (written / bandwidth) * 1000;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
    }
    if (stopAt === body.length) {
      res.end();
      return written;
    }
  }
  // Reset: the connection is cut hard. Truncate: the server closes cleanly but early, so the
  // client sees fewer bytes than Content-Length promised.
  if (fault === 'reset') res.socket?.resetAndDestroy?.();
  else res.socket?.end();
  res.destroy();
  return written;
}

function write(res: ServerResponse, chunk: Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    if (res.write(chunk)) return resolve();
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

export function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}
