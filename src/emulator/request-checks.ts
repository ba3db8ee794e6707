/** What both of the emulator's interfaces read from a request: one header, and a secret compared in constant time. */
import type { IncomingMessage } from 'node:http';
import { timingSafeEqual } from 'node:crypto';

/** The header's value; the first one when it was sent more than once. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Whether two secrets are equal, compared in time that does not depend on where they differ. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
