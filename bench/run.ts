/**
 * `npm run bench`: the export benchmark (bench/export.ts), then the storage benchmark
 * (bench/storage.ts), each in a process of its own so that one's memory is not counted in the
 * other's. Arguments go to the export benchmark: `npm run bench -- --sets photos --runs 5`.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const benches: [string, string[]][] = [
  ['export.ts', process.argv.slice(2)],
  ['storage.ts', []],
];

let failed = false;
for (const [file, args] of benches) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(here, file), ...args], { stdio: 'inherit', cwd: join(here, '..') });
  if (run.status !== 0) {
    console.error(`bench/${file} failed (${run.signal ?? `exit code ${run.status}`})`);
    failed = true;
  }
}
process.exitCode = failed ? 1 : 0;
