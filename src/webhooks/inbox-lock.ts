/**
 * The inbox's append lock: `.events.lock` in the inbox folder, made with exclusive create and held
 * for one append (a write and an fsync), so that `serve` and a `reconcile` in another process never
 * write into each other's lines and each sees the other's events before it adds its own. A lock left
 * by a killed process of this host is taken over at once; one from another host (a shared folder)
 * once it is 30 s old, since a holder keeps it for milliseconds.
 */
import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROCESS_TOKEN, alive } from '../stages/import/journal/file.js';

const FOREIGN_STALE_MS = 30_000;

/** Thrown when the lock stays held by a live process for longer than the wait allowed. */
export class InboxLockedError extends Error {
  override readonly name = 'InboxLockedError';
}

/** Runs `fn` holding the lock at `lock`, waiting at most `waitMs` for a live holder to let go. */
export async function withInboxLock<T>(lock: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const me = `${process.pid} ${hostname()} ${PROCESS_TOKEN} ${randomBytes(6).toString('hex')}\n`;
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; !(await tryCreate(lock, me)); attempt += 1) {
    const seen = await readHolder(lock);
    if (seen && isStale(seen)) await breakStale(lock, seen.text);
    else if (Date.now() > deadline) throw new InboxLockedError(`the webhook inbox is locked by ${seen ? `pid ${seen.pid} on ${seen.host}` : 'another process'} for over ${waitMs / 1000} s; if no other wds-files process uses it, remove ${lock}`);
    else await sleep(Math.min(20, 1 + attempt));
  }
  try {
    return await fn();
  } finally {
    if ((await readHolder(lock))?.text === me) await unlink(lock);
  }
}

async function tryCreate(lock: string, text: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(lock, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
  return true;
}

interface Holder {
  text: string;
  pid: number;
  host: string;
  token: string;
  mtimeMs: number;
}

async function readHolder(lock: string): Promise<Holder | null> {
  try {
    const [text, info] = await Promise.all([readFile(lock, 'utf8'), stat(lock)]);
    const [pid, host, token] = text.split(' ');
    return { text, pid: Number(pid), host: host ?? '', token: token ?? '', mtimeMs: info.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function isStale(holder: Holder): boolean {
  // Not written yet: its maker is between the create and the write, or died there.
  if (!holder.text.endsWith('\n')) return Date.now() - holder.mtimeMs > FOREIGN_STALE_MS;
  if (holder.host === hostname()) return !alive(holder.pid, holder.token);
  return Date.now() - holder.mtimeMs > FOREIGN_STALE_MS;
}

/** Moves a stale lock aside; if a live holder's fresh lock was moved instead, puts it back. */
async function breakStale(lock: string, stale: string): Promise<void> {
  const aside = `${lock}.stale-${randomBytes(6).toString('hex')}`;
  try {
    await rename(lock, aside);
  } catch {
    return; // Another process removed it first.
  }
  try {
    if ((await readFile(aside, 'utf8')) !== stale) await link(aside, lock);
  } catch {
    // A newer lock already stands there.
  } finally {
    await unlink(aside);
  }
}
