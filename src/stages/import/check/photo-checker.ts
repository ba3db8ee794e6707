/**
 * Photos are checked and converted in a process of their own (photo-check-child.ts), which ends
 * as soon as the import has checked its last file (the requests go on without it).
 *
 * Why (issue 5, bench/import): libvips decodes whole frames on its worker threads, and glibc keeps
 * what each thread freed in that thread's arena; after the first large frame it also raises its
 * mmap threshold, so later frames come from the arenas too. In the importing process that memory
 * stayed held through the sending of every request (bench/notes.md, "Photo checks"). The checker's process starts
 * with the allocator settings that stop it (one arena, large blocks always mapped; glibc reads them
 * only at start, so they cannot be set from inside a running process), and whatever it still holds
 * is returned when it ends. The importing process never loads sharp or the HEIC decoder, and a
 * photo in a folder is read by the checker, not passed through the importing process.
 *
 * A second benefit: an image that crashes the image library takes the checker down, not the
 * import. The files that process had are checked once more in a new one; a file it was checking
 * when two checkers died is refused with that reason.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PhotoCheck } from './photo-check.js';

/** Larger files are not even read: no phone photo comes near it. */
export const MAX_PHOTO_SOURCE_BYTES = 64 * 1024 * 1024;

/**
 * What the checker answers: the check, without the bytes (they stay on disk), and the sha256 of
 * the file as the source holds it (the import journal knows files by it).
 */
export type CheckVerdict = (Omit<Extract<PhotoCheck, { ok: true }>, 'data'> & { sha256: string }) | (Extract<PhotoCheck, { ok: false }> & { gone?: boolean });

/** A photo to check: its bytes, or a file on disk that the checker reads itself. */
export type CheckInput = Uint8Array | { path: string; size: number };

export interface CheckRequest {
  id: number;
  input: CheckInput;
  normalize: boolean;
  /** Where a converted JPEG is written. */
  output: string;
}

export type CheckReply = { id: number; result: CheckVerdict } | { id: number; error: string };

/** A file is checked in at most this many processes before it is refused as crashing the checker. */
const ATTEMPTS = 2;

/**
 * The allocator settings of the checker: glibc's own unless the user chose some. One arena and a
 * fixed 128 KB mmap threshold halve the checker's peak at the same speed (bench/notes.md, "Photo
 * checks"). Other C libraries ignore them.
 */
function checkerEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  const chosen = Object.keys(env).some((name) => name.startsWith('MALLOC_') || name === 'GLIBC_TUNABLES' || name === 'LD_PRELOAD');
  if (!chosen) {
    env.MALLOC_ARENA_MAX = '1';
    env.MALLOC_MMAP_THRESHOLD_ = '131072';
  }
  return env;
}

/**
 * The checker's script beside this module: compiled JavaScript when this is, else the TypeScript
 * source run through tsx (tests and `npm run wds`), resolved from the project's root.
 */
function checkerScript(): { script: string; execArgv: string[]; cwd?: string } {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    return { script: fileURLToPath(new URL('./photo-check-child.ts', here)), execArgv: ['--import', 'tsx'], cwd: fileURLToPath(new URL('../../../..', here)) };
  }
  return { script: fileURLToPath(new URL('./photo-check-child.js', here)), execArgv: [] };
}

interface Job {
  request: Omit<CheckRequest, 'id'>;
  attempts: number;
  child?: ChildProcess;
  resolve: (verdict: CheckVerdict) => void;
  reject: (error: Error) => void;
}

interface Checker {
  child: ChildProcess;
  ready: Promise<number>;
  started: boolean;
  /** Its end has been dealt with (a failed start can report both an error and an exit). */
  ended: boolean;
  /** Rejects `ready`. */
  fail: (error: Error) => void;
  /** The end of its standard error, for a checker that fails to start. */
  stderr: string;
}

export class PhotoChecker {
  #current: Checker | null = null;
  #jobs = new Map<number, Job>();
  #nextId = 0;
  #closed = false;

  /**
   * Checks a photo in the checker's process: bytes (which must stay as they are until this
   * settles) or a file on disk, read there with the folder source's rules and a file read error
   * answered as a refusal.
   */
  check(input: CheckInput, options: { normalize: boolean; output: string }): Promise<CheckVerdict> {
    if (this.#closed) return Promise.reject(new Error('the photo checker is closed'));
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#jobs.set(id, { request: { input, ...options }, attempts: 0, resolve, reject });
      this.#dispatch(id);
    });
  }

  /** The process id of the checker once it is ready (starting one if none runs). */
  running(): Promise<number> {
    return this.#checker().ready;
  }

  /** Ends the checker's process and waits for it to be gone, so its memory is returned. */
  async close(): Promise<void> {
    this.#closed = true;
    const current = this.#current;
    this.#current = null;
    if (!current || current.child.exitCode !== null || current.child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => current.child.once('exit', () => resolve()));
    if (current.child.connected) current.child.disconnect();
    else current.child.kill();
    await gone;
  }

  #dispatch(id: number): void {
    const job = this.#jobs.get(id);
    if (!job) return;
    const checker = this.#checker();
    job.child = checker.child;
    job.attempts += 1;
    checker.ready.then(
      () => {
        // Sent once the checker is up; if it died meanwhile, its exit handler re-dispatches the job.
        if (job.child !== checker.child || !checker.child.connected) return;
        checker.child.send({ id, ...job.request } satisfies CheckRequest);
      },
      () => undefined,
    );
  }

  #checker(): Checker {
    if (this.#current) return this.#current;
    const { script, execArgv, cwd } = checkerScript();
    const child = fork(script, [], {
      execArgv,
      env: checkerEnv(),
      ...(cwd ? { cwd } : {}),
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      // A process group of its own: a terminal's Ctrl-C goes to the import, which finishes the
      // photos in hand and then closes the checker, instead of killing it in the middle of one.
      detached: true,
    });
    let ready!: (pid: number) => void;
    let fail!: (error: Error) => void;
    const checker: Checker = {
      child, ready: new Promise((resolve, reject) => ((ready = resolve), (fail = reject))), started: false, ended: false, fail, stderr: '',
    };
    checker.ready.catch(() => undefined);
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      checker.stderr = (checker.stderr + text).slice(-2000);
    });
    child.on('message', (message: CheckReply | { ready: true }) => {
      if ('ready' in message) {
        checker.started = true;
        ready(child.pid!);
        return;
      }
      const job = this.#jobs.get(message.id);
      if (!job || job.child !== child) return;
      this.#jobs.delete(message.id);
      if ('error' in message) job.reject(new Error(message.error));
      else job.resolve(message.result);
    });
    child.on('error', (error) => {
      checker.stderr = `${checker.stderr}${error.message}`;
      this.#ended(checker, null, null);
    });
    child.on('exit', (code, signal) => this.#ended(checker, code, signal));
    this.#current = checker;
    return checker;
  }

  #ended(checker: Checker, code: number | null, signal: NodeJS.Signals | null): void {
    if (checker.ended) return;
    checker.ended = true;
    if (this.#current === checker) this.#current = null;
    const how = signal ? `signal ${signal}` : code === null ? 'no process' : `exit code ${code}`;
    const mine = [...this.#jobs].filter(([, job]) => job.child === checker.child);
    if (!checker.started) {
      const error = new Error(`the photo checker ended before it was ready (${how})${checker.stderr ? `: ${checker.stderr.trim()}` : ''}`);
      checker.fail(error);
      for (const [id, job] of mine) {
        this.#jobs.delete(id);
        job.reject(error);
      }
      return;
    }
    for (const [id, job] of mine) {
      if (job.attempts < ATTEMPTS && !this.#closed) {
        this.#dispatch(id);
      } else {
        this.#jobs.delete(id);
        job.resolve({ ok: false, reason: `checking it ended the image checker ${job.attempts} times (${how}): the image library cannot read it safely` });
      }
    }
  }
}
