/**
 * Checked before the first request (DESIGN.md section 8): the report file, the export's target and
 * its lock, so that a run that could not keep its results finds out before it downloads or sends
 * anything. Missing folders are made, and removed again at the end if the run left them empty.
 */
import type { BucketStore } from '../archive/bucket/store.js';
import { randomBytes } from 'node:crypto';
import { mkdir, open, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { UsageError, say } from './connection.js';
import { clashProblem, type Place } from './path-clash.js';
import { shownCommandLine } from './secret-args.js';
import { exitCodeOf, stopSignal, stoppedBy } from './stop-signal.js';
import { removeEmptyDirs } from '../sinks/sink.js';
import { formatDuration, parseDuration } from '../util/duration.js';
import { TargetLockedError, type TargetLock } from '../util/target-lock.js';
import { lockFileOfPlace, lockTarget, type LockedPlace } from '../pipelines/target-lock.js';

export { withTargetOptions, type TargetArgs } from './target-options.js';

/** The command line as the lock shows it to other runs: the consumer secret masked. */
export function commandLine(argv: string[] = process.argv.slice(2)): string {
  return shownCommandLine(argv);
}

const why = (error: unknown): string => {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'read-only file system';
  if (code === 'ENOSPC') return 'no space left on the device';
  return (error as Error).message;
};

/** stat, or null when nothing is there (also when a folder on the way is a file: `ensureDir` names it). */
async function statOrNull(path: string): Promise<import('node:fs').Stats | null> {
  try {
    return await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

export class Preflight {
  /** Folders made for this run: `dir`, made from `from` (its first missing ancestor) down. */
  private readonly made: { dir: string; from: string }[] = [];
  private readonly locks: TargetLock[] = [];

  constructor(private readonly args: { quiet?: boolean }) {}

  /**
   * `--report FILE`: a file that can be written, in a folder made if missing, and none of the
   * places the command reads or writes (`places`).
   */
  async report(path: string | undefined, places: Place[] = []): Promise<void> {
    if (path === undefined) return;
    const label = `--report ${path}`;
    const clash = clashProblem(path, places);
    if (clash) throw new UsageError(`${label}: ${clash}`);
    const abs = resolve(path);
    const info = await statOrNull(abs);
    if (info?.isDirectory()) throw new UsageError(`${label}: is a folder; name a file for the report`);
    if (info) {
      // Opened for writing without emptying it: an earlier report stays until this run's replaces it.
      await open(abs, 'r+').then((h) => h.close(), (error: unknown) => {
        throw new UsageError(`${label}: the file cannot be written (${why(error)})`);
      });
      return;
    }
    await this.ensureDir(dirname(abs), label);
    await this.probe(dirname(abs), label);
  }

  /**
   * `--out` of an export, then its lock: a folder (made if missing), or a zip file whose folder is
   * made if missing and which, if it is there, is a zip (or `force` is set). Answers the lock, for
   * the export to check before it completes the target.
   */
  async exportTarget(out: string, options: { zip: boolean; force: boolean; waitLock?: string; archive?: boolean }): Promise<TargetLock> {
    const label = `--out ${out}`;
    const abs = resolve(out);
    // Before anything is made there (src/archive/target-check.ts, as the SDK checks). An archive
    // itself (`archive forget`, which locks it) is the one place inside an archive that may be.
    const { exportTargetProblem } = await import('../archive/target-check.js');
    const problem = await exportTargetProblem(out, { kind: options.archive ? 'archive' : options.zip ? 'zip' : 'folder', shown: label, force: options.force, forceHow: 'add --force' });
    if (problem) throw new UsageError(problem);
    await this.ensureDir(options.zip ? dirname(abs) : abs, label);
    // An archive is locked by `archive forget`, which must run on a full disk to free space.
    return this.takeLock(out, { kind: options.archive ? 'archive' : options.zip ? 'zip' : 'folder', path: abs }, options.waitLock, false, options.archive === true);
  }

  /**
   * `--out` of a command that writes one file by a rename (a sheet download), then its lock beside
   * it: not a folder, its folder made if missing, and a file already there replaced only when
   * `replaceable` says it may be, or with `force`; `refusal` says why it may not. Answers the
   * lock, for the command to check before its rename.
   */
  async fileTarget(out: string, options: { force: boolean; waitLock?: string; replaceable: (path: string) => Promise<boolean>; refusal: string }): Promise<TargetLock> {
    const label = `--out ${out}`;
    const abs = resolve(out);
    const info = await statOrNull(abs);
    if (info?.isDirectory()) throw new UsageError(`${label}: is a folder; name a file`);
    if (info && !options.force && !(await options.replaceable(abs))) throw new UsageError(`${label}: ${options.refusal}`);
    await this.ensureDir(dirname(abs), label);
    return this.takeLock(out, { kind: 'file', path: abs }, options.waitLock);
  }

  private async takeLock(out: string, place: LockedPlace, waitLock: string | undefined, retried = false, evenWhenFull = false): Promise<TargetLock> {
    const waitMs = waitLock === undefined ? 0 : parseDuration(waitLock) ?? 0;
    const signal = waitMs > 0 ? stopSignal() : undefined;
    let lock: TargetLock;
    try {
      lock = await lockTarget(place, {
        command: commandLine(),
        evenWhenFull,
        waitMs,
        signal,
        onWait: (holder) => say(this.args, `${out} is being written by ${holder ? `pid ${holder.pid} on ${holder.host}` : 'another run'}: waiting for it, up to ${formatDuration(waitMs)}`),
      });
    } catch (error) {
      const stopped = stoppedBy(signal);
      if (stopped) {
        await this.end();
        process.stderr.write(`wds-files: stopped by ${stopped} while waiting for ${out}; nothing was done\n`);
        process.exit(exitCodeOf(stopped));
      }
      if (error instanceof TargetLockedError) throw new Error(busyMessage(out, error, waitMs));
      // Another run that had made the folder removed it again as it ended (left empty): make it anew.
      const dir = dirname(lockFileOfPlace(place));
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !retried) {
        await this.ensureDir(dir, `--out ${out}`);
        return this.takeLock(out, place, waitLock, true, evenWhenFull);
      }
      throw new UsageError(`--out ${out}: cannot write in ${dir} (${why(error)})`);
    }
    this.locks.push(lock);
    if (lock.tookOver) say(this.args, `${out}: took over the lock of an earlier run (${lock.tookOver})`);
    return lock;
  }

  /**
   * The lock of a bucket archive (`locks/archive` in it, src/archive/bucket/lock.ts), released by
   * `end` as the others are; a busy lock is refused with the message a folder's gets.
   */
  async bucketArchive(store: BucketStore, waitLock: string | undefined): Promise<TargetLock> {
    const waitMs = waitLock === undefined ? 0 : parseDuration(waitLock) ?? 0;
    const { lockBucketArchive } = await import('../archive/bucket/lock.js');
    let lock: TargetLock;
    try {
      lock = await lockBucketArchive(store, {
        command: commandLine(),
        waitMs,
        onWait: (holder) => say(this.args, `${store.where} is being written by ${holder ? `pid ${holder.pid} on ${holder.host}` : 'another run'}: waiting for it, up to ${formatDuration(waitMs)}`),
      });
    } catch (error) {
      if (error instanceof TargetLockedError) throw new Error(busyMessage(store.where, error, waitMs));
      throw error;
    }
    this.locks.push(lock);
    if (lock.tookOver) say(this.args, `${store.where}: took over the lock of an earlier run (${lock.tookOver})`);
    return lock;
  }

  /** Releases the locks, and removes the folders made for this run that it left empty. */
  async end(): Promise<void> {
    for (const lock of this.locks.splice(0)) await lock.release();
    for (const { dir, from } of this.made.splice(0).reverse()) await removeEmptyDirs(dir, from);
  }

  private async ensureDir(dir: string, label: string): Promise<void> {
    try {
      const from = await mkdir(dir, { recursive: true });
      if (from !== undefined) this.made.push({ dir, from });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR' || code === 'EEXIST') throw new UsageError(`${label}: ${await fileOnTheWay(dir)} is a file, not a folder`);
      throw new UsageError(`${label}: the folder ${dir} cannot be made (${why(error)})`);
    }
  }

  /** Writes and removes a file in `dir`: the only sure test of writing (permissions, read-only mounts, ACLs). */
  private async probe(dir: string, label: string): Promise<void> {
    const file = join(dir, `.wds-probe-${randomBytes(6).toString('hex')}`);
    try {
      await (await open(file, 'wx')).close();
    } catch (error) {
      throw new UsageError(`${label}: cannot write in ${dir} (${why(error)})`);
    }
    await unlink(file).catch(() => undefined);
  }
}

/** The nearest ancestor of `dir` (or itself) that exists and is not a folder. */
async function fileOnTheWay(dir: string): Promise<string> {
  for (let current = dir; ; current = dirname(current)) {
    const info = await stat(current).catch(() => null);
    if (info && !info.isDirectory()) return current;
    if (dirname(current) === current) return dir;
  }
}

function busyMessage(out: string, error: TargetLockedError, waitedMs: number): string {
  const h = error.holder;
  const who = h
    ? `pid ${h.pid} on ${h.host} (${h.command}), running since ${h.started_at.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}`
    : 'another run (its details are not readable)';
  const waited = waitedMs > 0 ? ` Waited ${formatDuration(waitedMs)} for it.` : '';
  return `${out} is being written by another run: ${who}; lock file ${error.lockFile}.${waited} Run again when that run has ended, or add --wait-lock DURATION to wait for it.`;
}
