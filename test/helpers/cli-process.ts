/**
 * The CLI as a child process (`node .test-build/cli/main.js`, src/ compiled by test/global-setup.ts
 * as `npm run build` compiles it into dist/), run without blocking this
 * process, which may be serving the emulator meanwhile. Each run gets its own limiter state
 * folder (XDG_CACHE_HOME) and import journal folder (XDG_STATE_HOME) unless `env` names them, so
 * the CLI's windows never make a test wait; connection variables are cleared.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KEY, SECRET, type TestEmulator } from './emulator.js';

export const ROOT = resolve(import.meta.dirname, '../..');
/** Where test/global-setup.ts compiles src/ for the tests' child processes. */
export const CLI_BUILD = join(ROOT, '.test-build');
/** The compiled CLI's entry point: run it with `process.execPath`. */
export const CLI_MAIN = join(CLI_BUILD, 'cli', 'main.js');

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export const connectionArgs = (emu: TestEmulator): string[] => ['--base-url', emu.url, '--consumer-key', KEY, '--consumer-secret', SECRET];

export function spawnCli(args: string[], extraEnv: NodeJS.ProcessEnv = {}, cwd = ROOT): ChildProcessWithoutNullStreams {
  // Folders made here are the child's alone, and go when it ends; a test that reads them names its own.
  const made: string[] = [];
  const own = (name: string, prefix: string): string | undefined => {
    if (extraEnv[name] !== undefined) return extraEnv[name];
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // One code cache for the run's children (TMPDIR is the run's, test/global-setup.ts): they start
    // as a user's later runs do, not each compiling the whole CLI.
    WDS_CODE_CACHE: join(tmpdir(), 'wds-code-cache'),
    XDG_CACHE_HOME: own('XDG_CACHE_HOME', 'wds-cli-'),
    XDG_STATE_HOME: own('XDG_STATE_HOME', 'wds-state-'),
  };
  for (const name of ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET']) delete env[name];
  Object.assign(env, extraEnv);
  const child = spawn(process.execPath, [CLI_MAIN, ...args], { cwd, env });
  child.once('close', () => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  return child;
}

/** Resolves when the child ends, with what it printed. */
export function finished(child: ChildProcessWithoutNullStreams): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((done, fail) => {
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

export const runCli = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> => finished(spawnCli(args, env));

/** Resolves when the child's stderr matches, with all of it so far. */
export async function stderrMatching(child: ChildProcessWithoutNullStreams, pattern: RegExp, timeoutMs: number): Promise<string> {
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms in:\n${text}`)), timeoutMs);
    const listen = (chunk: Buffer): void => {
      text += chunk.toString();
      if (!pattern.test(text)) return;
      clearTimeout(timer);
      child.stderr.off('data', listen);
      resolve(text);
    };
    child.stderr.on('data', listen);
  });
}
