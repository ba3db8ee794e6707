/**
 * The inbox's append lock: `.events.lock` in the inbox folder, made by an exclusive link and held
 * for one append (a write and an fsync), so that `serve` and a `reconcile` in another process never
 * write into each other's lines and each sees the other's events before it adds its own. A lock left
 * by a killed process of this host is taken over at once; one from another host (a shared folder)
 * once it is 30 s old, since a holder keeps it for milliseconds.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { link, readFile, readdir, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROCESS_TOKEN, alive, holderIsStale as isStale, parseHolder, type LockHolder } from '../stages/import/journal/file.js';


/** Thrown when the lock stays held by a live process for longer than the wait allowed. */
export class InboxLockedError extends Error {
  override readonly name = 'InboxLockedError';
}

/** Runs `fn` holding the lock at `lock`, waiting at most `waitMs` for a live holder to let go. */
export async function withInboxLock<T>(lock: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const me = `${process.pid} ${hostname()} ${PROCESS_TOKEN} ${randomBytes(6).toString('hex')}\n`;
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; !tryCreate(lock, me); attempt += 1) {
    const seen = await readHolder(lock);
    if (seen && isStale(seen)) await breakStale(lock, seen.text);
    else if (Date.now() > deadline) throw new InboxLockedError(`the webhook inbox is locked by ${seen ? `pid ${seen.pid} on ${seen.host}` : 'another process'} for over ${waitMs / 1000} s; if no other wds-files process uses it, remove ${lock}`);
    else await sleep(Math.min(20, 1 + attempt));
  }
  try {
    return await fn();
  } finally {
    if (readText(lock) === me) unlinkSync(lock);
  }
}

function readText(lock: string): string | null {
  try {
    return readFileSync(lock, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Makes the lock with its holder written in it from the first instant: written to a file of its
 * own, then linked to the lock's name (which fails when the lock exists). A process killed between
 * an exclusive create and the write would leave an empty lock, whose holder nobody could tell.
 * Synchronous: taken once per group of deliveries, its few small calls cost less than as many
 * trips to the thread pool.
 */
function tryCreate(lock: string, text: string): boolean {
  const temp = `${lock}.${process.pid}-${randomBytes(6).toString('hex')}`;
  writeFileSync(temp, text, { mode: 0o600 });
  try {
    linkSync(temp, lock);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temp);
  }
}

/** Removes what a process killed while making a lock left beside it: `<lock>.<pid>-<random>` of a pid no longer running. */
export async function sweepLockLeftovers(lock: string): Promise<void> {
  const prefix = `${basename(lock)}.`;
  for (const name of await readdir(dirname(lock))) {
    const pid = /^(\d+)-[0-9a-f]+$/.exec(name.startsWith(prefix) ? name.slice(prefix.length) : '')?.[1];
    if (pid !== undefined && Number(pid) !== process.pid && !alive(Number(pid))) await unlink(join(dirname(lock), name)).catch(() => undefined);
  }
}

async function readHolder(lock: string): Promise<LockHolder | null> {
  try {
    const [text, info] = await Promise.all([readFile(lock, 'utf8'), stat(lock)]);
    return parseHolder(text, info.mtimeMs);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
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
