/**
 * Transpiles src/ once per test run into .test-build/ and bundles its CLI (scripts/bundle-cli.mjs),
 * which the tests' CLI child processes run (`node .test-build/cli/main.js`, as the package's
 * `dist/cli/main.js` runs). Starting a child through tsx costs about a second more CPU than the
 * compiled CLI, and the suite starts hundreds of them on two cores. The folder sits beside dist/
 * (its own, so that `npm pack` in pack.test can rebuild dist/ meanwhile) at the same depth, so the
 * CLI finds the package's root as it does there.
 *
 * The build is kept while no file under src/, the tsconfig files or the bundling script changed
 * (their paths, sizes and modification times, hashed), so that running one test file again does
 * not compile again.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { buildSync } from 'esbuild';
import { join, relative } from 'node:path';
import { CLI_BUILD, ROOT } from './helpers/cli-process.js';

const STAMP = join(CLI_BUILD, '.source-stamp');

function sourceStamp(): string {
  const hash = createHash('sha256');
  const add = (path: string): void => {
    const info = statSync(path);
    hash.update(`${relative(ROOT, path)}\0${info.size}\0${info.mtimeMs}\n`);
  };
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else add(path);
    }
  };
  walk(join(ROOT, 'src'));
  for (const name of ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts/bundle-cli.mjs']) add(join(ROOT, name));
  return hash.digest('hex');
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

export default function setup(): () => void {
  buildCli();
  return useRunTmpdir();
}

/**
 * Puts every temporary folder of the run (the tests', and their CLI children's, which inherit the
 * environment) under one folder, removed when the run ends. The files share their worker's modules
 * (vitest.config.ts, `isolate: false`), so a helper's `afterAll` runs for the first file of each
 * worker only: a run of the suite left 764 folders, 0.86 GB, in the system's temporary folder.
 */
function useRunTmpdir(): () => void {
  const runTmp = mkdtempSync(join(runTmpBase(), 'wds-test-run-'));
  process.env.TMPDIR = runTmp;
  return () => {
    // The run's S3 server (test/helpers/s3-server.ts), if a test started one.
    if (existsSync(join(runTmp, 'wds-s3-server', 'ceph', 'run'))) {
      try {
        execFileSync('bash', [join(import.meta.dirname, 'helpers', 's3-server.sh'), 'stop', join(runTmp, 'wds-s3-server', 'ceph')], { stdio: 'inherit' });
      } catch (error) {
        console.warn(`the run's S3 server was not stopped: ${(error as Error).message}`);
      }
    }
    try {
      rmSync(runTmp, { recursive: true, force: true });
    } catch (error) {
      // A tmpfs a failed test left mounted there stays, and so does its folder: said, not thrown.
      console.warn(`the run's temporary folder ${runTmp} was not removed whole: ${(error as Error).message}`);
    }
  };
}

/**
 * Where the run's folder goes: the memory-backed /dev/shm when it has room, unless TMPDIR names a
 * place. The large tests write tens of thousands of files each, and on a disk mounted with `discard`
 * every removal waits for the device: `rm -rf` of the 50,000 files of one export took 104 s there
 * at load 11, and the run's end waited minutes for it.
 */
function runTmpBase(): string {
  if (process.env.TMPDIR) return tmpdir();
  try {
    const shm = statfsSync('/dev/shm');
    accessSync('/dev/shm', constants.W_OK);
    if (shm.bavail * shm.bsize >= 4 * 1024 ** 3 && shm.ffree >= 1_000_000) return '/dev/shm';
  } catch {
    // No /dev/shm here (or not writable): the system's temporary folder.
  }
  return tmpdir();
}

function buildCli(): void {
  const stamp = sourceStamp();
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === stamp) return;
  // Built beside the old build and swapped in, so a failed compile leaves no half-written folder.
  const fresh = `${CLI_BUILD}.${process.pid}`;
  rmSync(fresh, { recursive: true, force: true });
  try {
    // Each source file transpiled on its own, as tsc emits it: the types are checked apart (`npx
    // tsc --noEmit`, CI's typecheck step), and tsc's emit would add half a minute to every run.
    buildSync({
      entryPoints: sourceFiles(join(ROOT, 'src')),
      outdir: fresh,
      outbase: join(ROOT, 'src'),
      tsconfig: join(ROOT, 'tsconfig.build.json'),
      format: 'esm',
      platform: 'node',
      logLevel: 'silent',
    });
    // The CLI bundled as `npm run build` bundles it, so that the tests run what the package ships.
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'bundle-cli.mjs'), fresh], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    rmSync(fresh, { recursive: true, force: true });
    const { stdout, stderr, message } = error as { stdout?: Buffer; stderr?: Buffer; message: string };
    throw new Error(`compiling and bundling src/ for the CLI's child processes failed:\n${stdout || stderr ? `${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}` : message}`);
  }
  writeFileSync(join(fresh, '.source-stamp'), stamp);
  const old = `${CLI_BUILD}.old.${process.pid}`;
  if (existsSync(CLI_BUILD)) renameSync(CLI_BUILD, old);
  renameSync(fresh, CLI_BUILD);
  rmSync(old, { recursive: true, force: true });
}
