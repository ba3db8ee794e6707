/**
 * When the archive's own commands wrote in it (DESIGN.md section 10): a run, `forget` or `repair`
 * holding the archive's lock leaves two empty marker files in `<archive>/.wds-writes/`, one made
 * as it takes the lock and one as it lets it go. Their modification times, stamped by the file
 * system's clock (the one that stamps change times, also on a network share whose clock is off),
 * bound the times the archive changed its own files.
 *
 * A snapshot file's change time (ctime) moves whenever its inode changes: a write, a chmod, and also
 * each hard link made to it or removed (a run taking it over, `forget` removing an older snapshot).
 * So no change time recorded per file would stay true; instead a file's change time must fall in
 * one of these windows. A byte overwritten in place by anything else (even with its modification
 * time put back with `touch -r`) moves the change time outside them, which no program can set
 * back short of changing the system clock.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TargetLock } from '../util/target-lock.js';

export const WRITES_DIR = '.wds-writes';
/** Made once, when the record starts: files changed before it are older than the record. */
const SINCE = 'since';
/** Leeway on each side of a window where the file system stamps whole seconds (FAT to 2 s). */
export const WINDOW_SLACK_MS = 2000;
/**
 * Leeway where it stamps finer times (a kernel's coarse clock ticks in jiffies): a file changed a
 * second before a run starts is then told from the run's own writes.
 */
export const FINE_SLACK_MS = 100;
/** Windows that ended this long before the oldest snapshot started are dropped. */
const KEEP_BEFORE_OLDEST_MS = 24 * 3600_000;

/** The times the archive's commands wrote in it, as `changedOutside` compares them. */
export interface WriteWindows {
  /** When the record began (ms, file system clock); null for an archive with no record (made before it existed). */
  since: number | null;
  /** [from, to] pairs in ms, oldest first; `to` is Infinity for a command still holding the lock. */
  windows: [number, number][];
  /** The leeway on each side of a window, from how finely the markers' times were stamped (none: the wide one). */
  slackMs?: number;
}

/**
 * Whether a change time (`ctimeMs` of a stat) lies outside every window in which the archive's
 * commands wrote: the file was changed by something else. A file changed before the record began
 * is not judged by its change time.
 */
export function changedOutside(ctimeMs: number, record: WriteWindows): boolean {
  const slack = record.slackMs ?? WINDOW_SLACK_MS;
  if (record.since === null || ctimeMs < record.since - slack) return false;
  // Most files were last changed by a recent command: the newest windows are looked at first.
  for (let i = record.windows.length - 1; i >= 0; i -= 1) {
    const [from, to] = record.windows[i]!;
    if (ctimeMs >= from - slack && ctimeMs <= to + slack) return false;
  }
  return true;
}

/**
 * Starts a window for a command that took `archive`'s lock: a marker made now, and one made when
 * the lock is let go (also when the process exits holding it). A command killed outright leaves
 * its window open: it is taken to last until the next command starts.
 */
export async function recordWrites(archive: string, lock: TargetLock): Promise<void> {
  const dir = join(archive, WRITES_DIR);
  const token = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  // A marker that cannot be made (a full disk, where `forget` must still run) does not stop the
  // command: its end marker, made once space is freed, closes a window from the one before.
  await (async () => {
    await mkdir(dir, { recursive: true });
    const since = join(dir, SINCE);
    if (!(await stat(since).catch(() => null))) await writeFile(since, '');
    await writeFile(join(dir, `${token}.start`), '');
  })().catch(() => undefined);
  lock.onRelease(() => {
    // Synchronous: it also runs as the process exits. Made, not touched with utimes: its time is
    // then the file system's, not this machine's.
    try {
      closeSync(openSync(join(dir, `${token}.end`), 'w'));
    } catch {
      // The archive's disk is gone or full: the window stays open until the next command.
    }
  });
}

/** The windows recorded in `archive` (none, with `since` null, for an archive without a record). */
export async function readWrites(archive: string): Promise<WriteWindows> {
  const dir = join(archive, WRITES_DIR);
  const names = await readdir(dir).catch(() => null);
  if (!names) return { since: null, windows: [] };
  const timeOf = async (name: string): Promise<number | null> => (await stat(join(dir, name)).catch(() => null))?.mtimeMs ?? null;
  const since = names.includes(SINCE) ? await timeOf(SINCE) : null;
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  await Promise.all(names.map(async (name) => {
    const m = /^(.+)\.(start|end)$/.exec(name);
    if (!m) return;
    const time = await timeOf(name);
    if (time !== null) (m[2] === 'start' ? starts : ends).set(m[1]!, time);
  }));
  const opened = [...starts].sort(([, a], [, b]) => a - b);
  const windows: [number, number][] = opened.map(([token, from], i) => [from, ends.get(token) ?? opened[i + 1]?.[1] ?? Infinity]);
  // An end without its start: a command that could not make its first marker (a full disk) but
  // made the last. It wrote between the window before it and its end.
  for (const [token, to] of ends) {
    if (starts.has(token)) continue;
    const before = windows.filter(([, end]) => end <= to).at(-1)?.[1] ?? since ?? to;
    windows.push([before, to]);
  }
  windows.sort((a, b) => a[0] - b[0]);
  // A marker stamped with a fraction of a second shows a file system of fine times (a whole second
  // by chance, one in a thousand, only widens the leeway).
  const stamped = [...starts.values(), ...ends.values(), ...(since === null ? [] : [since])];
  const slackMs = stamped.some((time) => time % 1000 !== 0) ? FINE_SLACK_MS : WINDOW_SLACK_MS;
  return { since: since ?? windows[0]?.[0] ?? null, windows, slackMs };
}

/**
 * Removes the markers of windows that ended a day or more before `oldest` (the oldest snapshot's
 * start, ms): no file of the archive was last changed then. Called by a command holding the lock.
 */
export async function trimWrites(archive: string, oldest: number): Promise<void> {
  const dir = join(archive, WRITES_DIR);
  const names = await readdir(dir).catch(() => [] as string[]);
  const tokens = new Set(names.filter((n) => n.endsWith('.end')).map((n) => n.slice(0, -'.end'.length)));
  await Promise.all([...tokens].map(async (token) => {
    const end = await stat(join(dir, `${token}.end`)).catch(() => null);
    if (!end || end.mtimeMs >= oldest - KEEP_BEFORE_OLDEST_MS) return;
    await rm(join(dir, `${token}.start`), { force: true });
    await rm(join(dir, `${token}.end`), { force: true });
  }));
}
