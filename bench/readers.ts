/**
 * The commands that read an archive or an export (issue 46): peak RSS (wait4, bench/max-rss.ts),
 * wall and CPU time of the shipped CLI's `archive check` (with and without --read-data),
 * `archive show`, `archive diff`, `archive restore` (to a folder and to a zip), `archive copy` and `verify` (of a
 * snapshot, with and without --report, and of a zip), against a synthetic folder archive of two snapshots of N tiny files
 * (test/helpers/synthetic-archive.ts: manifests written by the archive's own code, the second
 * snapshot hard-linking the first's unchanged files), made on disk without the emulator.
 *
 *   npx tsx bench/readers.ts                               2,000 and 20,000 files a snapshot
 *   npx tsx bench/readers.ts --files 2000,20000,200000     and 200,000 (minutes to make)
 *   npx tsx bench/readers.ts --files 500 --no-build        a quick check that the bench runs
 *   npx tsx bench/readers.ts --heap 16                     each command with --max-old-space-size=16:
 *                                                          which of them finish in a heap that small
 *   npx tsx bench/readers.ts --cli PATH/main.js            another build of the CLI (an older one, to compare)
 *
 * A command that fails prints its exit code and the last line it wrote to stderr.
 */
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { makeSyntheticArchive } from '../test/helpers/synthetic-archive.js';
import { measure } from './max-rss.js';
import { CLI, ensureBuilt } from './shipped-cli.js';
import { removeTree } from '../src/util/remove-tree.js';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SIZES = (argValue('files') ?? '2000,20000').split(',').map((n) => Number(n.replaceAll('_', '')));
if (!SIZES.every((n) => Number.isInteger(n) && n >= 100)) throw new Error(`--files must be whole numbers of 100 or more, separated by commas, got ${argValue('files')}`);
const HEAP = argValue('heap');
const OTHER_CLI = argValue('cli');
const built = OTHER_CLI ? `node ${OTHER_CLI}` : ensureBuilt(!process.argv.includes('--no-build'));
const cli = OTHER_CLI ?? CLI;

const uptime = async (): Promise<string> => (await promisify(execFile)('uptime')).stdout.trim().replace(/.*load average: /, 'load ');

console.log(`bench/readers: ${built}${HEAP ? `, --max-old-space-size=${HEAP}` : ''}; ${await uptime()}`);
for (const files of SIZES) {
  const dir = await mkdtemp(join(tmpdir(), 'wds-bench-readers-'));
  try {
    const startedAt = performance.now();
    const made = await makeSyntheticArchive(join(dir, 'archive'), files);
    console.log(`\n${files} files a snapshot (two snapshots; made in ${((performance.now() - startedAt) / 1000).toFixed(1)} s); ${await uptime()}`);
    const { archive, ids } = made;
    const commands: [string, string[]][] = [
      ['archive check', ['archive', 'check', archive]],
      ['archive check --read-data 100', ['archive', 'check', archive, '--read-data', '100']],
      ['archive show', ['archive', 'show', archive]],
      ['archive diff latest~1 latest', ['archive', 'diff', archive, 'latest~1', 'latest']],
      ['archive restore --out folder', ['archive', 'restore', archive, '--out', join(dir, 'restored')]],
      ['archive restore --out zip', ['archive', 'restore', archive, '--out', join(dir, 'restored.zip')]],
      ['archive copy (to a new folder)', ['archive', 'copy', archive, join(dir, 'copy')]],
      ['verify (a snapshot)', ['verify', join(archive, 'snapshots', ids[1])]],
      ['verify --report (a snapshot)', ['verify', join(archive, 'snapshots', ids[1]), '--report', join(dir, 'verify.json')]],
      ['verify (a zip)', ['verify', join(dir, 'restored.zip')]],
    ];
    for (const [name, args] of commands) {
      const run = await measure(process.execPath, [...(HEAP ? [`--max-old-space-size=${HEAP}`] : []), cli, ...args, '--json']);
      const failed = run.code === 0 ? '' : `  FAILED (exit ${run.code ?? `signal ${run.signal}`}: ${run.stderr.trim().split('\n').filter((l) => !/^\s*\d+: 0x/.test(l)).at(-1)?.slice(0, 120) ?? ''})`;
      console.log(`  ${name.padEnd(32)} peak RSS ${(run.maxRssKb / 1024).toFixed(0).padStart(4)} MB  ${(run.ms / 1000).toFixed(2).padStart(7)} s  cpu ${(run.userS + run.systemS).toFixed(2)} s${failed}`);
    }
  } finally {
    await removeTree(dir);
  }
}
