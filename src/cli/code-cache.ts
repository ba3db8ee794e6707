/**
 * Starts the bundled CLI (`dist/cli/wds-files.cjs`, scripts/bundle-cli.mjs) with V8's code cache:
 * the bytecode of the functions an earlier run of the same command compiled, kept under
 * `$XDG_CACHE_HOME/wds-files/code/`. Compiling the bundle's modules and then each function at its
 * first call is a large part of every run's start, on the one thread that start waits for
 * (bench/notes.md). Node 20 has no compile cache for ES modules, hence one CommonJS bundle run
 * through `vm.Script`, which takes cached data.
 *
 * V8 checks a cache against its own version, its flags and the source's length, and refuses one
 * that does not match; the file name carries a hash of the bundle, so a cache is never offered to
 * another build. Nothing here can fail a command: a cache that cannot be read or written is simply
 * not used.
 */
import { createHash } from 'node:crypto';
import { accessSync, closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
import { FLAGS_AT_START } from '../util/runtime.js';
import { cacheFolder } from '../util/xdg.js';

/** Caches kept; the least recently written go first. Each is 1 to 2 MB. */
const KEEP = 8;
/** Bytes of the sha256 of the rest, which comes first in the file; then a byte of its generation, then the cached data. */
const DIGEST = 32;
/**
 * Writes of one command's cache. A cache holds the code its run compiled: a nightly archive's first
 * run (every file downloaded) takes another path than the next (unchanged files linked), and the
 * second write adds what the first did not meet. A fixed count, because measuring what a run
 * compiled (`getHeapCodeStatistics`) walks the whole heap (bench/notes.md, "Code cache").
 */
const WRITES = 2;
/** Age after which a temporary file in the cache folder is taken for one a killed run left. */
const STALE_MS = 60_000;

/** `WDS_CODE_CACHE` if set (`off`: none), else `$XDG_CACHE_HOME/wds-files/code` (default `~/.cache/wds-files/code`). */
function codeFolder(): string | null {
  const chosen = process.env.WDS_CODE_CACHE;
  if (chosen === 'off') return null;
  return chosen || join(cacheFolder(), 'code');
}

/**
 * Whether `info` (of the cache folder or a file in it) is this user's and no one else can write
 * it: V8 runs the bytecode it is given, so a cache another user could write is not read.
 */
function ownOnly(info: { uid: number; mode: number }): boolean {
  return (process.getuid === undefined || info.uid === process.getuid()) && (info.mode & 0o022) === 0;
}

/**
 * The command's words (`run nightly.yaml`, `attachments export`), before its first option: runs
 * of one command take the same path through the code, and each kind keeps a cache of its own.
 */
function commandKey(argv: string[]): string {
  const words: string[] = [];
  for (const word of argv) {
    if (word.startsWith('-')) break;
    words.push(word);
  }
  return createHash('sha256').update(words.join('\0')).digest('hex').slice(0, 16);
}

/** The cached data in `path` and its generation, if it is whole and safe to give V8. */
function readCache(folder: string, path: string): { data: Buffer; generation: number } | undefined {
  try {
    if (!ownOnly(statSync(folder))) return undefined;
    const fd = openSync(path, 'r');
    try {
      if (!ownOnly(fstatSync(fd))) return undefined;
      const file = readFileSync(fd);
      const rest = file.subarray(DIGEST);
      // V8 checks the cache's length but not its bytes: a file damaged on disk is refused here.
      if (rest.length < 2 || !createHash('sha256').update(rest).digest().equals(file.subarray(0, DIGEST))) return undefined;
      return { generation: rest[0]!, data: rest.subarray(1) };
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/**
 * Writes what `make` gives as the cache at `path`. The folder is made and checked first, so that a
 * run whose folder cannot be written (a read-only home) does not serialise a cache at every exit.
 */
function writeCache(folder: string, path: string, generation: number, make: () => Buffer): void {
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  if (!ownOnly(statSync(folder))) return;
  accessSync(folder, constants.W_OK);
  const temp = `${path}.${process.pid}.tmp`;
  try {
    const rest = Buffer.concat([Buffer.from([generation]), make()]);
    writeFileSync(temp, Buffer.concat([createHash('sha256').update(rest).digest(), rest]), { mode: 0o600 });
    renameSync(temp, path);
  } catch {
    rmSync(temp, { force: true });
    return;
  }
  const entries = readdirSync(folder).map((name) => ({ name, at: statSync(join(folder, name), { throwIfNoEntry: false })?.mtimeMs ?? 0 }));
  const caches = entries.filter(({ name }) => name.endsWith('.bin')).sort((a, b) => b.at - a.at);
  // A run killed while it wrote left its temporary file; one being written now is younger.
  const stale = entries.filter(({ name, at }) => name.endsWith('.tmp') && at < Date.now() - STALE_MS);
  for (const { name } of [...caches.slice(KEEP), ...stale]) rmSync(join(folder, name), { force: true });
}

/** At exit: writes the cache when there was none or V8 refused it, and once more by the next run (WRITES). */
function saveCache(folder: string, path: string, cached: { generation: number } | undefined, script: Script): void {
  const taken = cached !== undefined && !script.cachedDataRejected;
  if (taken && cached.generation >= WRITES) return;
  try {
    // V8 keeps the flags a cache was made under in it, and refuses it under others: the run's
    // tuning (src/util/runtime.ts) is put back to what the next run starts with.
    for (const flag of FLAGS_AT_START) setFlagsFromString(flag);
    writeCache(folder, path, taken ? cached.generation + 1 : 1, () => script.createCachedData());
  } catch {
    // A cache folder that cannot be written (read-only, full) only means no cache.
  }
}

/**
 * Runs the CommonJS bundle at `bundleUrl` (whose content hashes to `bundleId`) as Node would
 * `require` it, with the code cache of this command if there is one (saveCache).
 */
export function runBundle(bundleUrl: URL, bundleId: string): void {
  const file = fileURLToPath(bundleUrl);
  // ASCII, wrapped as CommonJS wraps a module (scripts/bundle-cli.mjs): read as it is, one byte a character.
  const source = readFileSync(file, 'latin1');
  const folder = codeFolder();
  const path = folder === null ? '' : join(folder, `${bundleId}-${commandKey(process.argv.slice(2))}.bin`);
  const cached = folder === null ? undefined : readCache(folder, path);
  const script = new Script(source, { filename: file, cachedData: cached?.data });
  if (folder !== null) process.once('exit', () => saveCache(folder, path, cached, script));
  const module = { exports: {} };
  const wrapper = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
  wrapper.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
}
