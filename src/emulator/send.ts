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

/**
 * An answer body: one buffer, or parts sent one after the other (a generated file: slices of
 * padding shared by every file, blobs.ts `readParts`), never joined into one buffer.
 */
export type Body = Buffer | readonly Buffer[];

const partsOf = (body: Body): readonly Buffer[] => (Buffer.isBuffer(body) ? [body] : body);

export function bodyLength(body: Body): number {
  let length = 0;
  for (const part of partsOf(body)) length += part.length;
  return length;
}

/** Bytes `start` to `end` (exclusive) of a body, as parts (slices, no copy). */
export function sliceBody(body: Body, start: number, end: number): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const part of partsOf(body)) {
    const next = at + part.length;
    if (next > start && at < end) out.push(part.subarray(Math.max(0, start - at), Math.min(part.length, end - at)));
    at = next;
    if (at >= end) break;
  }
  return out;
}

/** Resolves with the number of body bytes written. */
export async function sendBody(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number>,
  body: Body,
  options: SendOptions = {},
): Promise<number> {
  const length = bodyLength(body);
  res.writeHead(status, { ...headers, 'Content-Length': length });
  if (options.headOnly) {
    res.end();
    return 0;
  }
  const fault = options.fault?.kind;
  // A cut or truncated body stops somewhere in its middle.
  const stopAt = fault === 'reset' || fault === 'truncate' ? Math.floor(length / 2) : length;
  const bandwidth = options.bandwidth ?? 0;
  let written = 0;
  if (!bandwidth) {
    if (stopAt === length) {
      if (Buffer.isBuffer(body)) res.end(body);
      else {
        // Parts go out together, in as few socket writes as the kernel takes them in.
        res.cork();
        for (const part of body) res.write(part);
        res.uncork();
        res.end();
      }
      return length;
    }
    await write(res, sliceBody(body, 0, stopAt));
    written = stopAt;
  } else {
    // Slices of a twentieth of a second each, so a slow connection still streams steadily.
    const slice = Math.max(1024, Math.floor(bandwidth / 20));
    const started = Date.now();
    while (written < stopAt && !res.destroyed) {
      const end = Math.min(stopAt, written + slice);
      await write(res, sliceBody(body, written, end));
      written = end;
      const due = started + (written / bandwidth) * 1000;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
    }
    if (stopAt === length) {
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

/** Writes the parts together; resolves once the response takes more (or is gone). */
function write(res: ServerResponse, parts: readonly Buffer[]): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.cork();
    let more = true;
    for (const part of parts) more = res.write(part);
    res.uncork();
    if (more) return resolve();
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

/**
 * A JSON answer whose last key is a long list, encoded an item at a time into parts of about
 * 64 KB: the listing of a company of 200,000 files is never built as one object tree or one string.
 * Its bytes are those of `JSON.stringify` of the same object.
 */
export class JsonParts {
  constructor(readonly parts: Buffer[]) {}

  static withList(fields: Record<string, unknown>, key: string, items: Iterable<unknown>): JsonParts {
    const parts: Buffer[] = [];
    const head = JSON.stringify(fields);
    let pending = `${head === '{}' ? '{' : `${head.slice(0, -1)},`}${JSON.stringify(key)}:[`;
    let first = true;
    for (const item of items) {
      pending += (first ? '' : ',') + JSON.stringify(item);
      first = false;
      if (pending.length >= 65_536) {
        parts.push(Buffer.from(pending));
        pending = '';
      }
    }
    parts.push(Buffer.from(`${pending}]}`));
    return new JsonParts(parts);
  }
}

/** A route's answer as bytes: JSON, or parts already encoded. */
export const jsonBody = (body: unknown): Body => (body instanceof JsonParts ? body.parts : json(body));
