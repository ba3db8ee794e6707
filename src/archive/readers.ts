/**
 * Readers of a snapshot (`archive restore`) and its removal (`archive forget`, a run's retention)
 * keep out of each other's way through marks in `<archive>/.wds-readers/`: empty files whose name
 * says the snapshot, what is done (read or remove) and who does it (pid, process start, host),
 * and whose modification time is a heartbeat. An empty file fits on a full disk, where a forget is
 * needed most. A mark is stale by the rules of the archive's lock (`holderGone`).
 *
 * Each side makes its own mark first and looks for the other's after: a reader that finds no
 * removal under way reads, and the removal, whose mark was made later, then finds the reader and
 * keeps the snapshot; a removal that finds no reader goes on, and a reader that made its mark
 * later finds the removal and waits for it, then reads the snapshot if it is still there.
 */
import { randomBytes } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { mkdir, open, readdir, rmdir, stat, unlink, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HEARTBEAT_MS, holderGone, processStart } from '../util/target-lock.js';

export const READERS_DIR = '.wds-readers';

export type MarkKind = 'read' | 'remove';
type Kind = MarkKind;

/** A mark found: who reads or removes a snapshot, and since when. */
export interface Mark {
  id: string;
  kind: Kind;
  pid: number;
  host: string;
  proc_start?: string;
  /** When the mark was made (ISO). */
  since: string;
}

/** A mark this process holds; `release` removes it (safe to call twice). */
export interface HeldMark {
  readonly file: string;
  release(): Promise<void>;
}

const readersDir = (archive: string): string => join(archive, READERS_DIR);

/** A mark's name: the snapshot, what is done, and who does it (also a bucket archive's, bucket/readers.ts). */
export function nameOf(id: string, kind: Kind): string {
  const start = processStart(process.pid) ?? '-';
  return [id, kind, process.pid, start, randomBytes(6).toString('hex'), Buffer.from(hostname()).toString('base64url')].join('.');
}

export function parseName(name: string): Omit<Mark, 'since'> | null {
  const parts = name.split('.');
  if (parts.length !== 6) return null;
  const [id, kind, pid, start, , host] = parts as [string, string, string, string, string, string];
  if ((kind !== 'read' && kind !== 'remove') || !/^\d+$/.test(pid)) return null;
  return { id, kind, pid: Number(pid), host: Buffer.from(host, 'base64url').toString(), ...(start === '-' ? {} : { proc_start: start }) };
}

/** Makes this process's mark; its heartbeat runs until it is released. */
async function makeMark(archive: string, id: string, kind: Kind): Promise<HeldMark> {
  const file = join(readersDir(archive), nameOf(id, kind));
  for (let attempt = 0; ; attempt += 1) {
    await mkdir(readersDir(archive), { recursive: true });
    try {
      await (await open(file, 'wx')).close();
      break;
    } catch (error) {
      // The folder removed by another mark's release between the two: made again.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw error;
    }
  }
  const onExit = (): void => {
    try {
      unlinkSync(file);
    } catch {
      // Gone already.
    }
  };
  process.on('exit', onExit);
  const heartbeat = setInterval(() => {
    const now = new Date();
    void utimes(file, now, now).catch(() => undefined);
  }, HEARTBEAT_MS);
  heartbeat.unref();
  let released = false;
  return {
    file,
    async release() {
      if (released) return;
      released = true;
      clearInterval(heartbeat);
      process.off('exit', onExit);
      await unlink(file).catch(() => undefined);
      await rmdir(readersDir(archive)).catch(() => undefined); // only when no other mark is in it
    },
  };
}

/** The live marks of `kind` on snapshot `id` (not this process's own); stale ones are removed. */
async function liveMarks(archive: string, id: string, kind: Kind, own?: HeldMark): Promise<Mark[]> {
  const names = await readdir(readersDir(archive)).catch(() => [] as string[]);
  const live: Mark[] = [];
  for (const name of names) {
    const mark = parseName(name);
    const path = join(readersDir(archive), name);
    if (!mark || mark.id !== id || mark.kind !== kind || path === own?.file) continue;
    const info = await stat(path).catch(() => null);
    if (!info) continue;
    if (holderGone(mark, info.mtimeMs)) await unlink(path).catch(() => undefined);
    else live.push({ ...mark, since: info.birthtime.getTime() > 0 ? info.birthtime.toISOString() : new Date(info.ctimeMs).toISOString() });
  }
  return live;
}

export const whoReads = (m: Mark): string => `pid ${m.pid} on ${m.host}, since ${m.since}`;

/** A snapshot gone or about to go while a restore started: it is not read. */
export class SnapshotRemovedError extends Error {}

/**
 * Marks snapshot `id` (folder `dir`) as read by this process, for as long as it reads it. A removal
 * under way is waited for, up to `waitMs`; a snapshot removed meanwhile is a SnapshotRemovedError.
 * An archive this process cannot write in (a read-only mount, another user's) gets no mark: none of
 * this process's forgets could remove the snapshot either, and the restore reads it all the same.
 */
export async function markReading(archive: string, id: string, dir: string, waitMs = 30_000): Promise<HeldMark | null> {
  let mark: HeldMark;
  try {
    mark = await makeMark(archive, id, 'read');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') return null;
    throw error;
  }
  try {
    const until = Date.now() + waitMs;
    for (;;) {
      const removing = await liveMarks(archive, id, 'remove', mark);
      if (removing.length === 0) break;
      if (Date.now() >= until) throw new SnapshotRemovedError(`snapshot ${id} is being removed (${whoReads(removing[0]!)}, archive forget or a run's retention); nothing was restored`);
      await sleep(100);
    }
    if (!(await stat(dir).catch(() => null))) throw new SnapshotRemovedError(`snapshot ${id} was removed (archive forget or a run's retention) as this restore started; nothing was restored`);
    return mark;
  } catch (error) {
    await mark.release();
    throw error;
  }
}

/**
 * Announces the removal of snapshot `id`, then answers its readers: with any, the removal is
 * withdrawn (`mark` null) and the snapshot must stay; with none, the snapshot may go, and `mark` is
 * released once it is out of view. A disk that cannot take even an empty file leaves the look alone.
 */
export async function markRemoving(archive: string, id: string): Promise<{ readers: Mark[]; mark: HeldMark | null }> {
  const mark = await makeMark(archive, id, 'remove').catch(() => null);
  const readers = await liveMarks(archive, id, 'read', mark ?? undefined);
  if (readers.length > 0) {
    await mark?.release();
    return { readers, mark: null };
  }
  return { readers, mark };
}

/** The live readers of snapshot `id`, for a dry run. */
export const readersOf = (archive: string, id: string): Promise<Mark[]> => liveMarks(archive, id, 'read');
