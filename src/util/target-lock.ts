/**
 * One writer per target (DESIGN.md section 8): a lock file made with exclusive create, holding who
 * writes (pid, host, command, start time). Its modification time is the heartbeat, touched every
 * 10 s while the run goes on. On this host a lock is stale only when its process has ended: a
 * holder that is alive but stopped (Ctrl-Z, a machine that slept) goes on when it is continued, so
 * its old heartbeat says nothing. A lock from another host is stale when its heartbeat is older
 * than 2 minutes. A stale lock is taken over, by one run only even when several find it stale at
 * once (see `breakStale`); a holder that finds its lock taken over stops (`TargetLock.signal`,
 * `assertHeld`). Knows nothing of commands: the CLI, and later the snapshot archive, say what the
 * target is and what to tell the user.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, unlinkSync } from 'node:fs';
import { link, open, readdir, rename, rm, stat, unlink, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { noSpaceCause } from './no-space.js';

/** The lock of a folder target, inside it; dot-named so that imports of the folder skip it. */
export const FOLDER_LOCK_NAME = '.wds-lock';
export const HEARTBEAT_MS = 10_000;
export const STALE_AFTER_MS = 120_000;
/** A takeover takes milliseconds: a claim older than this was left by a run that died meanwhile. */
const CLAIM_STALE_MS = 10_000;
/** How long a lock whose details are not readable yet (just made, not written) counts as busy at least. */
const UNREADABLE_GRACE_MS = 1_000;

/** The lock file of a target: `<folder>/.wds-lock`, or `<file>.lock` beside a file. */
export const lockFileOf = (target: string, kind: 'folder' | 'file'): string =>
  kind === 'folder' ? join(target, FOLDER_LOCK_NAME) : `${target}.lock`;

/** Whether a name in a folder target belongs to its lock (the lock, or a takeover's claim). */
export const isLockFileName = (name: string): boolean => name === FOLDER_LOCK_NAME || name.startsWith(`${FOLDER_LOCK_NAME}.`);

/** Who holds a target's lock, as its lock file says. */
export interface LockHolder {
  /** The holding process. */
  pid: number;
  /** The host it runs on: a pid is checked for life only on the same host. */
  host: string;
  /** What it runs (a command line without secrets, or `runExport (photos) in SCRIPT`). */
  command: string;
  /** ISO time the run took the lock. */
  started_at: string;
  /** Random for each holding: tells it apart from a later holding of the same file. */
  token: string;
  /**
   * When the holding process started, in clock ticks since boot (Linux's /proc/PID/stat): a live
   * pid with another start time is a later process that reused it. Absent where there is no /proc.
   */
  proc_start?: string;
}

/** A lock file as read: its holder (null while not yet written, or unreadable) and its heartbeat. */
interface Seen {
  holder: LockHolder | null;
  heartbeatMs: number;
  /** Who the holding is, for a takeover: the token, or the file's identity if it has none. */
  identity: string;
  /** The file itself (device and inode): an empty lock kept on a full disk is known by it. */
  inode: string;
}

/** A run's target is locked by another run that is alive (DESIGN.md section 8); its message names it. */
export class TargetLockedError extends Error {
  /** `TargetLockedError`, as `instanceof` would say across copies of the package. */
  override readonly name = 'TargetLockedError';
  /**
   * @param lockFile The lock file: `FOLDER/.wds-lock`, or `NAME.zip.lock` beside a zip.
   * @param holder Who holds it; null while its details are not readable.
   * @param heartbeatAgeMs How long ago the holder last touched it (it does every 10 s).
   */
  constructor(readonly lockFile: string, readonly holder: LockHolder | null, readonly heartbeatAgeMs: number) {
    super(holder
      ? `${lockFile} is held by pid ${holder.pid} on ${holder.host} (${holder.command}), since ${holder.started_at}`
      : `${lockFile} is held by another run whose details are not readable`);
  }
}

/**
 * Another run took over the lock this run held (this one was stopped or hung past the stale age,
 * or its lock file was removed): the target is that run's now, and this one must not complete it.
 */
export class LockLostError extends Error {
  /** `LockLostError`, as `instanceof` would say across copies of the package. */
  override readonly name = 'LockLostError';
  /**
   * @param lockFile The lock file this run held.
   * @param holder Who holds it now; null when the file is gone or not readable yet.
   */
  constructor(readonly lockFile: string, readonly holder: LockHolder | null) {
    super(`another run took over the lock ${lockFile}${holder ? ` (pid ${holder.pid} on ${holder.host}: ${holder.command}, since ${holder.started_at})` : ' (the lock file was removed or replaced)'}; this run stopped without completing its output, and left what that run writes alone`);
  }
}

export interface AcquireOptions {
  /** Who we are, as the holder's `command`; must hold no secret. */
  command: string;
  /** How long to wait for a busy lock; 0 (the default) refuses at once. */
  waitMs?: number;
  /** How often a busy lock is looked at again while waiting. Default 250 ms. */
  pollMs?: number;
  /** Called once, when the lock is busy and the wait begins. */
  onWait?: (holder: LockHolder | null) => void;
  /** Stops the wait: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** How often the holder renews the heartbeat. Default 10 s (HEARTBEAT_MS). */
  heartbeatMs?: number;
  /**
   * On a full disk, holds the lock with its file made but left empty (an exclusive create needs no
   * data block; the holder's details need one), and writes the details in once there is room: for
   * `archive forget`, which frees the space. Other runs take an empty lock for busy, and for stale
   * only once its heartbeat is 2 minutes old, as any lock whose details they cannot read.
   */
  evenWhenFull?: boolean;
}

export interface TargetLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** Why the lock found there was taken over (its pid had ended, or its heartbeat was old); null if there was none. */
  readonly tookOver: string | null;
  /** Aborted, with a {@link LockLostError}, once the heartbeat finds the lock is another run's. */
  readonly signal: AbortSignal;
  /** Looks at the lock file now: rejects with a {@link LockLostError} unless it is still ours. Called before a run completes its target. */
  assertHeld(): Promise<void>;
  /** Removes the lock file if it is still ours. Safe to call twice. */
  release(): Promise<void>;
  /**
   * `step` runs as the lock is let go, before its file is removed (and as the process exits
   * holding it, hence synchronous): a snapshot archive records when its commands wrote in it.
   */
  onRelease(step: () => void): void;
}

/**
 * A check of `lock` for a run that completes many things one after another (files restored into
 * place): the lock file is read at most every `everyMs`, so thousands of files do not cost
 * thousands of reads, but always on the first call after a pause longer than that (a process
 * stopped and continued), when a takeover is likeliest. A loss already known throws at once.
 */
export function lockCheck(lock: TargetLock | undefined, everyMs = 500): () => Promise<void> {
  let last = Number.NEGATIVE_INFINITY;
  return async () => {
    if (!lock) return;
    lock.signal.throwIfAborted();
    // Either way: a clock set back must not put the next read off.
    if (Math.abs(Date.now() - last) < everyMs) return;
    await lock.assertHeld();
    last = Date.now();
  };
}

export async function acquireTargetLock(file: string, options: AcquireOptions): Promise<TargetLock> {
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    command: options.command,
    started_at: new Date().toISOString(),
    token: randomBytes(12).toString('hex'),
  };
  const procStart = processStart(process.pid);
  if (procStart !== null) holder.proc_start = procStart;
  const started = Date.now();
  const deadline = started + (options.waitMs ?? 0);
  let tookOver: string | null = null;
  let waiting = false;
  for (;;) {
    options.signal?.throwIfAborted();
    const made = await tryCreate(file, holder, options.evenWhenFull === true);
    if (made) return new HeldLock(file, holder, tookOver, options.heartbeatMs ?? HEARTBEAT_MS, made === true ? null : made.inode);
    const seen = await look(file);
    if (!seen) continue; // released between the create and the look: try again at once
    const stale = staleReason(seen);
    if (stale) {
      // Noted whoever removes it: of runs that find it stale at once, one removes it and another
      // may be the one to take the lock.
      tookOver = stale;
      if (!(await breakStale(file, seen))) await sleep(20);
      continue;
    }
    const now = Date.now();
    const graceEnd = seen.holder ? 0 : started + UNREADABLE_GRACE_MS;
    if (now >= Math.max(deadline, graceEnd)) throw new TargetLockedError(file, seen.holder, now - seen.heartbeatMs);
    if (!waiting && seen.holder && now < deadline) {
      waiting = true;
      options.onWait?.(seen.holder);
    }
    await sleep(Math.min(options.pollMs ?? 250, Math.max(1, Math.max(deadline, graceEnd) - now)), undefined, { signal: options.signal }).catch(() => undefined);
  }
}

/**
 * Exclusive create, then the holder written; a write that fails removes the file again, but one
 * that finds the disk full with `emptyOnFull`, which keeps the file, empty, and answers its inode.
 */
async function tryCreate(file: string, holder: LockHolder, emptyOnFull = false): Promise<boolean | { inode: string }> {
  let handle;
  try {
    handle = await open(file, 'wx');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code === 'ENOSPC') throw new Error(`cannot take the lock ${file}: ${noSpaceCause(file)} (ENOSPC)`, { cause: error });
    throw error;
  }
  try {
    await handle.writeFile(`${JSON.stringify(holder)}\n`);
    await handle.close();
  } catch (error) {
    if (emptyOnFull && (error as NodeJS.ErrnoException).code === 'ENOSPC') {
      // Nothing of the write landed (a full disk gives no block): the file is empty, as just made.
      const kept = await handle.stat().then((info) => (info.size === 0 ? inodeOf(info) : null), () => null);
      await handle.close().catch(() => undefined);
      if (kept) return { inode: kept };
    }
    await handle.close().catch(() => undefined);
    await unlink(file).catch(() => undefined);
    throw error;
  }
  return true;
}

const inodeOf = (info: { dev: number; ino: number }): string => `${info.dev}:${info.ino}`;

/** The lock file as it is now; null when there is none. */
async function look(file: string): Promise<Seen | null> {
  // The holder and the heartbeat are read through one open file: a read by path and a stat by path
  // could see two files when another run replaces a stale lock in between, and take the old
  // holder for live under the new lock's fresh heartbeat.
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const info = await handle.stat();
    const holder = parseHolder(await handle.readFile('utf8'));
    return { holder, heartbeatMs: info.mtimeMs, identity: holder?.token ?? `${info.ino}-${info.mtimeMs}`, inode: inodeOf(info) };
  } finally {
    await handle.close();
  }
}

function parseHolder(text: string): LockHolder | null {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid !== 'number' || typeof value.host !== 'string' || typeof value.token !== 'string') return null;
    const holder: LockHolder = { pid: value.pid, host: value.host, command: String(value.command ?? ''), started_at: String(value.started_at ?? ''), token: value.token };
    if (typeof value.proc_start === 'string') holder.proc_start = value.proc_start;
    return holder;
  } catch {
    return null;
  }
}

function staleReason(seen: Seen): string | null {
  return holderGone(seen.holder, seen.heartbeatMs);
}

/**
 * Why the holder of a lock (or of any mark kept as a lock is: src/archive/readers.ts) has gone, by
 * the rules of the lock; null while it may be alive. `heartbeatMs` is the file's modification time.
 */
export function holderGone(h: Pick<LockHolder, 'pid' | 'host' | 'proc_start'> | null, heartbeatMs: number): string | null {
  const who = h ? `pid ${h.pid} on ${h.host}` : 'a run whose details were not readable';
  // On this host the pid tells: a live holder may be stopped (Ctrl-Z, SIGSTOP, a machine that
  // slept) and go on writing when continued, so its heartbeat's age is no sign it has gone.
  if (h && h.host === hostname()) {
    if (h.pid === process.pid) return null;
    if (!processExists(h.pid)) return `${who} had ended`;
    const start = h.proc_start === undefined ? null : processStart(h.pid);
    if (start !== null && start !== h.proc_start) return `${who} had ended (another process has its pid now)`;
    return null;
  }
  const age = Date.now() - heartbeatMs;
  if (age > STALE_AFTER_MS) return `${who} had not renewed it for ${Math.round(age / 1000)} s`;
  return null;
}

/**
 * A process's start time in clock ticks since boot, field 22 of Linux's /proc/PID/stat; null
 * where it cannot be read (no /proc, or another user's process hidden).
 */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2, the command name in parentheses, may hold spaces: count from after its ')' (field 3).
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes a stale lock, as one run only. The runs that find it stale race for a claim named by
 * that holding (exclusive create); the winner checks under its claim that the lock is still that
 * holding, moves it aside, and checks the moved file once more before deleting it: had a fresh lock
 * replaced it meanwhile, that lock is put back. The others wait and look again, and find either
 * no lock or the winner's fresh one. Answers whether the stale lock is gone.
 */
async function breakStale(file: string, seen: Seen): Promise<boolean> {
  const claimBase = `${file}.takeover-${seen.identity}`;
  const passed: string[] = [];
  let claim: string | null = null;
  for (let n = 0; n < 100 && !claim; n += 1) {
    const candidate = `${claimBase}.${n}`;
    if (await tryCreate(candidate, { pid: process.pid, host: hostname(), command: 'takeover', started_at: new Date().toISOString(), token: seen.identity })) {
      claim = candidate;
      break;
    }
    const info = await stat(candidate).catch(() => null);
    if (info && Date.now() - info.mtimeMs < CLAIM_STALE_MS) return false; // another run is taking it over
    passed.push(candidate);
  }
  if (!claim) return false;
  try {
    const now = await look(file);
    if (!now) return true;
    if (now.identity !== seen.identity) return false;
    const aside = `${file}.stale-${randomBytes(6).toString('hex')}`;
    try {
      await rename(file, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
      throw error;
    }
    const moved = await look(aside);
    if (moved && moved.identity !== seen.identity) {
      await link(aside, file).catch(() => undefined);
      await unlink(aside).catch(() => undefined);
      return false;
    }
    await unlink(aside).catch(() => undefined);
    return true;
  } finally {
    await rm(claim, { force: true });
    for (const old of passed) await rm(old, { force: true });
  }
}

class HeldLock implements TargetLock {
  private readonly heartbeat: NodeJS.Timeout;
  private readonly lost = new AbortController();
  private released = false;
  private readonly releaseSteps: (() => void)[] = [];
  /** A run that ends by process.exit (a second Ctrl-C, a fatal error) still removes its lock. */
  private readonly onExit = (): void => {
    try {
      if (parseHolder(readFileSync(this.file, 'utf8'))?.token === this.holder.token || (this.empty !== null && inodeOf(statSync(this.file)) === this.empty)) {
        this.runReleaseSteps();
        unlinkSync(this.file);
      }
    } catch {
      // Gone already, or unreadable: nothing of ours to remove.
    }
  };

  /**
   * @param empty The inode of the lock file while it is held empty (made on a full disk, the
   *   holder not written yet), or null once the holder is in it.
   */
  constructor(readonly file: string, readonly holder: LockHolder, readonly tookOver: string | null, heartbeatMs: number, private empty: string | null = null) {
    this.heartbeat = setInterval(() => void this.beat(), heartbeatMs);
    this.heartbeat.unref();
    process.on('exit', this.onExit);
  }

  get signal(): AbortSignal {
    return this.lost.signal;
  }

  private async beat(): Promise<void> {
    try {
      const seen = await look(this.file);
      if (!this.ours(seen)) return;
      const now = new Date();
      await utimes(this.file, now, now);
      await this.fillIn();
    } catch {
      // A heartbeat missed is made up by the next one.
    }
  }

  async assertHeld(): Promise<void> {
    if (!this.lost.signal.aborted && !this.released && this.ours(await look(this.file))) await this.fillIn().catch(() => undefined);
    this.lost.signal.throwIfAborted();
  }

  /** Writes the holder into a lock held empty, through the file itself: a full disk leaves it empty for now. */
  private async fillIn(): Promise<void> {
    if (this.empty === null) return;
    const handle = await open(this.file, 'r+');
    try {
      if (inodeOf(await handle.stat()) !== this.empty) return;
      await handle.writeFile(`${JSON.stringify(this.holder)}\n`);
      this.empty = null;
    } catch (error) {
      // A write cut short by the full disk is taken back: readers see an empty lock, not half a holder.
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') await handle.truncate(0).catch(() => undefined);
      else throw error;
    } finally {
      await handle.close();
    }
  }

  /**
   * Whether the lock file seen is still this holding's. One that is gone or another's was taken
   * over (or removed by hand): the heartbeat stops, and the run is told through `signal`.
   */
  private ours(seen: Seen | null): boolean {
    if (seen?.holder?.token === this.holder.token) return true;
    // Held empty, or being filled in: the file is ours while it is the one made.
    if (this.empty !== null && seen !== null && seen.inode === this.empty && seen.holder === null) return true;
    if (this.released) return false; // a beat under way as the run released its lock
    clearInterval(this.heartbeat);
    if (!this.lost.signal.aborted) this.lost.abort(new LockLostError(this.file, seen?.holder ?? null));
    return false;
  }

  onRelease(step: () => void): void {
    this.releaseSteps.push(step);
  }

  private runReleaseSteps(): void {
    for (const step of this.releaseSteps.splice(0)) step();
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.heartbeat);
    process.off('exit', this.onExit);
    const seen = await look(this.file).catch(() => null);
    // A lock another run took over is that run's, and so is what happens in the target from now.
    if (seen?.holder?.token === this.holder.token || (this.empty !== null && seen?.inode === this.empty)) {
      this.runReleaseSteps();
      await unlink(this.file).catch(() => undefined);
    }
    await sweepClaims(this.file);
  }
}

/** Claims and moved-aside files that runs killed during a takeover left beside the lock. */
async function sweepClaims(file: string): Promise<void> {
  const dir = dirname(file);
  const prefix = `${basename(file)}.`;
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(`${prefix}takeover-`) && !name.startsWith(`${prefix}stale-`)) continue;
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info && Date.now() - info.mtimeMs > CLAIM_STALE_MS) await rm(path, { force: true });
  }
}
