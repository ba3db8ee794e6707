/**
 * The import journal on disk: lines appended one at a time under a short lock, and the whole file
 * replaced by its compacted form (write to a temporary file, fsync, rename, fsync the folder), so
 * that a run killed at any moment leaves either the old journal or the new one, whole. The lock
 * (`.<journal>.lock` beside it, made with exclusive create) keeps two runs against one company from
 * appending to a journal that the other is replacing: a line written to the old file then would be
 * lost. The lock and the temporary file are dot-named, so that only journals are named `journal-*`.
 */
import { closeSync, fstatSync, fsyncSync, linkSync, openSync, readFileSync, readdirSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** A lock whose holder runs elsewhere is taken as left behind once this old: a holder keeps it for milliseconds. */
const FOREIGN_STALE_MS = 30_000;
/** How long a run waits for a lock held by a live process before it stops with an error. */
const LOCK_WAIT_MS = 60_000;
/** Lines written to the compacted file per write. */
const LINES_PER_WRITE = 1_000;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** The journal's writes are synchronous, so a wait for its lock is too (milliseconds, in practice). */
const sleepSync = (ms: number): void => void Atomics.wait(sleeper, 0, 0, ms);

/** Runs `fn` on the file opened with `flags`, and closes it. */
function withFile<T>(path: string, flags: string, fn: (fd: number) => T): T {
  const fd = openSync(path, flags, 0o600);
  try {
    return fn(fd);
  } finally {
    closeSync(fd);
  }
}

/** Runs `fn` on the file opened for reading; null when there is no such file. */
function ifPresent<T>(path: string, fn: (fd: number) => T): T | null {
  try {
    return withFile(path, 'r', fn);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Tells this process from an earlier one that had the same pid: in a container each run may well
 * be pid 1, and a lock or a request such a run left is not this run's.
 */
export const PROCESS_TOKEN = randomBytes(8).toString('hex');

/** Whether the process of this host with that pid (and token, when known) is still running. */
export function alive(pid: number, token?: string): boolean {
  if (pid === process.pid) return token === undefined || token === PROCESS_TOKEN;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Where the file was when it was read: a compaction by another run since gives it another inode. */
export interface JournalMark {
  ino: number;
  bytes: number;
}

/** Bytes of the journal read at a time: a journal of every file ever imported is not read whole. */
const READ_BYTES = 64 * 1024;

/**
 * Hands each line of the journal to `each` as it is read (the last one too when a crash cut it),
 * and answers its mark; null when there is no journal yet.
 */
export function readJournal(path: string, each: (line: string) => void): JournalMark | null {
  return ifPresent(path, (fd) => {
    const block = Buffer.allocUnsafe(READ_BYTES);
    let bytes = 0;
    // A line longer than a block (a request of a thousand files) is gathered in parts.
    let parts: Buffer[] = [];
    for (;;) {
      const read = readSync(fd, block, 0, block.length, bytes);
      if (read === 0) break;
      bytes += read;
      let from = 0;
      for (let nl = block.indexOf(0x0a, 0); nl >= 0 && nl < read; nl = block.indexOf(0x0a, from)) {
        const piece = block.subarray(from, nl);
        each(parts.length ? Buffer.concat([...parts, piece]).toString('utf8') : piece.toString('utf8'));
        parts = [];
        from = nl + 1;
      }
      if (from < read) parts.push(Buffer.from(block.subarray(from, read)));
    }
    if (parts.length) each(Buffer.concat(parts).toString('utf8'));
    return { ino: fstatSync(fd).ino, bytes };
  });
}

/** The journal's lock file: `.<name>.lock` in its folder. */
export const journalLockOf = (path: string): string => join(dirname(path), `.${basename(path)}.lock`);

/**
 * Runs `fn` holding the journal's lock. A lock left by a process of this host that has ended (or,
 * from another host, not touched for 30 s) is moved aside and removed; had a live run's fresh lock
 * taken its place meanwhile, that one is put back.
 */
export function withJournalLock<T>(path: string, fn: () => T): T {
  const lock = journalLockOf(path);
  const me = `${process.pid} ${hostname()} ${PROCESS_TOKEN} ${randomBytes(6).toString('hex')}\n`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let attempt = 0; ; attempt += 1) {
    if (tryCreate(lock, me)) break;
    const seen = readHolder(lock);
    if (seen && isStale(seen)) breakStale(lock, seen.text);
    else if (Date.now() > deadline) {
      throw new Error(`the import journal ${path} is locked by ${seen ? `pid ${seen.pid} on ${seen.host}` : 'another run'} for over ${LOCK_WAIT_MS / 1000} s; if no import runs, remove ${lock}`);
    } else sleepSync(Math.min(20, 1 + attempt));
  }
  try {
    return fn();
  } finally {
    if (readHolder(lock)?.text === me) unlinkSync(lock);
  }
}

function tryCreate(lock: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(lock, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new Error(`cannot lock the import journal (${lock}): ${(error as Error).message}`);
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Who holds a short lock (the journal's, the webhook inbox's): `pid host token` and a newline, and when it was written. */
export interface LockHolder {
  text: string;
  pid: number;
  host: string;
  token: string;
  mtimeMs: number;
}

/** The holder written in a lock file's text. */
export function parseHolder(text: string, mtimeMs: number): LockHolder {
  const [pid, host, token] = text.split(' ');
  return { text, pid: Number(pid), host: host ?? '', token: token ?? '', mtimeMs };
}

function readHolder(lock: string): LockHolder | null {
  return ifPresent(lock, (fd) => parseHolder(readFileSync(fd, 'utf8'), fstatSync(fd).mtimeMs));
}

/**
 * Whether a short lock's holder is gone: one of this machine whose process ended, or one written
 * elsewhere (or not written yet) longer ago than any holder keeps it. `ownIsStale` counts a lock
 * of this very process as stale, for locks never held while another is asked for.
 */
export function holderIsStale(holder: LockHolder, ownIsStale = false): boolean {
  // Not written yet: its maker is between the create and the write, or died there.
  if (!holder.text.endsWith('\n')) return Date.now() - holder.mtimeMs > FOREIGN_STALE_MS;
  if (holder.host === hostname()) return !alive(holder.pid, holder.token) || (ownIsStale && holder.pid === process.pid);
  return Date.now() - holder.mtimeMs > FOREIGN_STALE_MS;
}

// The journal's lock is taken and released within one synchronous call: one of this process is never held while another is asked for.
const isStale = (holder: LockHolder): boolean => holderIsStale(holder, true);

function breakStale(lock: string, stale: string): void {
  const aside = `${lock}.stale-${randomBytes(6).toString('hex')}`;
  try {
    renameSync(lock, aside);
  } catch {
    return; // Another run removed it first.
  }
  try {
    if (readFileSync(aside, 'utf8') !== stale) linkSync(aside, lock);
  } catch {
    // A newer lock already stands there: the one moved aside was stale after all, or its holder finds it gone.
  } finally {
    unlinkSync(aside);
  }
}

/**
 * Appends one line and flushes it to disk. A file that ends in a line cut short (a run killed
 * mid-write) gets a line break first, so that the new line stays whole.
 */
export function appendLine(path: string, line: string): void {
  appendLines(path, [line]);
}

/** Lines appended at once, under one lock and one fsync (a run notes a thousand files at its end). */
export function appendLines(path: string, lines: string[]): void {
  withJournalLock(path, () => {
    try {
      withFile(path, 'a+', (fd) => {
        const size = fstatSync(fd).size;
        const last = Buffer.alloc(1);
        const cut = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a;
        writeSync(fd, `${cut ? '\n' : ''}${lines.join('\n')}\n`);
        fsyncSync(fd);
      });
    } catch (error) {
      throw new Error(`cannot write the import journal ${path}: ${(error as Error).message}`);
    }
  });
}

/** Removes a file that may be gone already (renamed into place, or removed by another run). */
function removeIfThere(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Gone already.
  }
}

const tempPrefix = (path: string): string => `.${basename(path)}.compacting-`;

/**
 * This process's temporary file for compacting the journal at `path`. It carries the process token
 * as well as the pid: runs in containers may all be pid 1, and two of them compacting one shared
 * journal must not write the same file.
 */
export const compactionTempOf = (path: string): string => join(dirname(path), `${tempPrefix(path)}${process.pid}-${PROCESS_TOKEN}`);

/**
 * A temporary file of another process with this pid is not touched while this young: its run may be
 * live in another container, waiting for the lock before its rename (it writes the file again then).
 */
const SAME_PID_TEMP_STALE_MS = 2 * LOCK_WAIT_MS;

/** Temporary files of compactions whose run was killed. */
function sweepTemps(path: string): void {
  const prefix = tempPrefix(path);
  for (const name of readdirSync(dirname(path))) {
    if (!name.startsWith(prefix)) continue;
    // `<pid>-<token>`, or `<pid>` alone as earlier versions named it.
    const [pidText, token] = name.slice(prefix.length).split('-');
    const pid = Number(pidText);
    if (!Number.isInteger(pid)) continue;
    const file = join(dirname(path), name);
    if (pid !== process.pid) {
      if (!alive(pid)) removeIfThere(file);
    } else if (token !== PROCESS_TOKEN) {
      const age = ifPresent(file, (fd) => Date.now() - fstatSync(fd).mtimeMs);
      if (age !== null && age > SAME_PID_TEMP_STALE_MS) removeIfThere(file);
    }
  }
}

/**
 * Replaces the journal read at `mark` by `lines` and whatever other runs appended since. Answers
 * false, leaving the journal as it was, when another run replaced it since it was read, or when
 * the new file cannot be written (the journal stays whole; the next run tries again).
 */
export function replaceJournal(path: string, lines: Iterable<string>, mark: JournalMark): boolean {
  const temp = compactionTempOf(path);
  try {
    sweepTemps(path);
    return withFile(temp, 'w', (fd) => {
      // Written before taking the lock, which others wait for: only the tail and the rename are under it.
      let some: string[] = [];
      for (const line of lines) {
        some.push(line);
        if (some.length < LINES_PER_WRITE) continue;
        writeSync(fd, `${some.join('\n')}\n`);
        some = [];
      }
      if (some.length) writeSync(fd, `${some.join('\n')}\n`);
      return withJournalLock(path, () => {
        const tail = tailSince(path, mark);
        if (tail === null) return false;
        if (tail.length) writeSync(fd, tail[tail.length - 1] === 0x0a ? tail : Buffer.concat([tail, Buffer.from('\n')]));
        fsyncSync(fd);
        renameSync(temp, path);
        syncFolder(dirname(path));
        return true;
      });
    });
  } catch {
    return false;
  } finally {
    removeIfThere(temp);
  }
}

/** What was appended to the journal since `mark`; null if the file is no longer the one read then. */
function tailSince(path: string, mark: JournalMark): Buffer | null {
  return ifPresent(path, (fd) => {
    const { ino, size } = fstatSync(fd);
    if (ino !== mark.ino || size < mark.bytes) return null;
    const tail = Buffer.alloc(size - mark.bytes);
    let got = 0;
    while (got < tail.length) got += readSync(fd, tail, got, tail.length - got, mark.bytes + got);
    return tail;
  });
}

/** The rename is durable once the folder's entry is on disk. */
function syncFolder(folder: string): void {
  withFile(folder, 'r', fsyncSync);
}
