/**
 * The CLI's code cache (src/cli/code-cache.ts): a command's first two runs leave the bytecode they
 * compiled under `$XDG_CACHE_HOME/wds-files/code/`, readable by its user alone, and later runs of
 * that command start from it. V8 refuses a cache made under other flags, and an export tunes
 * V8's flags as it runs: were they not put back, every run would find its cache refused and write
 * it again. A damaged cache is replaced, not given to V8; a folder others can write is not used.
 * Runs at once, a run killed while it wrote, and a full disk leave no cache cut short.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { expectMatchesState, state, tempDir } from '../helpers/export.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { isRoot, useTmpfs } from '../helpers/tmpfs.js';

// Files over 1 MB, 16 MB in all: the export reads large bodies, for which it tunes V8 the most.
const emu = useEmulator({ generate: { members: 6, photo_ratio: 0, attachments_per_member: [2, 2], attachment_bytes: [1_200_000, 1_500_000] } });

const codeFolder = (cache: string): string => join(cache, 'wds-files', 'code');
const disk = useTmpfs('cli/code-cache.test', '1m');
const readOnly = useTmpfs('cli/code-cache.test', '1m', 'ro');
const isWhole = (bytes: Buffer): boolean => createHash('sha256').update(bytes.subarray(32)).digest().equals(bytes.subarray(0, 32));

/** The one cache file in `cache`, with what tells a rewrite (a new file renamed in) from none. */
function theCache(cache: string): { path: string; ino: number; mtimeMs: number; mode: number; bytes: Buffer } {
  const names = readdirSync(codeFolder(cache));
  expect(names).toHaveLength(1);
  const path = join(codeFolder(cache), names[0]!);
  const info = statSync(path);
  return { path, ino: info.ino, mtimeMs: info.mtimeMs, mode: info.mode & 0o777, bytes: readFileSync(path) };
}

async function exportWith(cache: string, env: NodeJS.ProcessEnv = {}): Promise<void> {
  const out = join(tempDir(), 'out');
  // The secret from the environment: given as a flag, it is warned about, and this run must print no warning.
  const connection = { WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
  const run = await runCli(['attachments', 'export', '--out', out], { XDG_CACHE_HOME: cache, WDS_CODE_CACHE: undefined, ...connection, ...env });
  expect(run.stderr).not.toMatch(/warning|error/i);
  expect(run.code).toBe(0);
  await expectMatchesState(out, await state(emu()), 'attachments');
}

it('the first run of a command writes its cache for its user alone, the second adds to it, and the third takes it as it is', async () => {
  const cache = tempDir('wds-code-cache-');
  await exportWith(cache);
  const first = theCache(cache);
  expect(first.mode).toBe(0o600);
  expect(statSync(codeFolder(cache)).mode & 0o777).toBe(0o700);
  expect(first.bytes.length).toBeGreaterThan(100_000);

  await exportWith(cache);
  const second = theCache(cache);
  expect(second.path).toBe(first.path);
  expect(second.ino).not.toBe(first.ino);

  await exportWith(cache);
  const third = theCache(cache);
  expect({ path: third.path, ino: third.ino, mtimeMs: third.mtimeMs }).toEqual({ path: second.path, ino: second.ino, mtimeMs: second.mtimeMs });
});

it('a damaged cache is not used: the command runs as ever and the cache is written anew', async () => {
  const cache = tempDir('wds-code-cache-');
  await exportWith(cache);
  const written = theCache(cache);
  const damaged = Buffer.from(written.bytes);
  const at = Math.floor(damaged.length / 2);
  damaged.writeUInt8(damaged.readUInt8(at) ^ 0xff, at);
  writeFileSync(written.path, damaged);

  await exportWith(cache);
  const after = theCache(cache);
  expect(after.ino).not.toBe(written.ino);
  // Whole again: its first 32 bytes are the sha256 of the rest.
  expect(isWhole(after.bytes)).toBe(true);
});

it('a cache folder that others can write is neither read nor written', async () => {
  const cache = tempDir('wds-code-cache-');
  mkdirSync(codeFolder(cache), { recursive: true });
  chmodSync(codeFolder(cache), 0o777);
  await exportWith(cache);
  expect(readdirSync(codeFolder(cache))).toEqual([]);
});

it('two runs at once write one whole cache between them, and the temporary file a killed run left goes', async () => {
  const cache = tempDir('wds-code-cache-');
  mkdirSync(codeFolder(cache), { recursive: true, mode: 0o700 });
  const left = join(codeFolder(cache), 'abc-def.bin.1234.tmp');
  writeFileSync(left, 'cut short');
  utimesSync(left, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
  await Promise.all([exportWith(cache), exportWith(cache)]);
  const written = theCache(cache);
  expect(isWhole(written.bytes)).toBe(true);
});

it.skipIf(!isRoot)('a cache folder on a full disk: the command succeeds and leaves no cache, whole or cut', async () => {
  const cache = join(disk(), 'cache');
  await exportWith(cache);
  expect(readdirSync(codeFolder(cache))).toEqual([]);
});

it.skipIf(!isRoot)('a cache folder on a read-only disk: the code cache is given up, and the limit windows\' refusal names the folder', async () => {
  // The client's limit windows live in the same folder: off, the code cache is the only user of it.
  await exportWith(readOnly(), { WDS_CLIENT_LIMITS: 'off' });
  expect(readdirSync(readOnly())).toEqual([]);

  const run = await runCli(['attachments', 'export', '--out', join(tempDir(), 'out'), ...connectionArgs(emu())], { XDG_CACHE_HOME: readOnly(), WDS_CODE_CACHE: undefined });
  expect(run.code).toBe(1);
  expect(run.stderr).toContain(`cannot keep the client's limit windows in ${join(readOnly(), 'wds-files')}`);
  expect(run.stderr).toContain('set XDG_CACHE_HOME to a folder you can write, or WDS_CLIENT_LIMITS=off');
});

it('WDS_CODE_CACHE names the folder, or turns the cache off', async () => {
  const cache = tempDir('wds-code-cache-');
  const chosen = join(tempDir('wds-code-cache-'), 'chosen');
  await exportWith(cache, { WDS_CODE_CACHE: chosen });
  expect(readdirSync(chosen)).toHaveLength(1);
  expect(existsSync(codeFolder(cache))).toBe(false);
  await exportWith(cache, { WDS_CODE_CACHE: 'off' });
  expect(existsSync(codeFolder(cache))).toBe(false);
  expect(readdirSync(chosen)).toHaveLength(1);
});
