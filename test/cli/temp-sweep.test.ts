/**
 * A run killed with SIGKILL leaves its temporary folders (sorted spills, sorted manifests...)
 * under the OS's temporary folder; the next CLI command removes those whose process is gone, and
 * never a live run's, another host's, or a folder with no marker of its owner (src/util/temp-dir.ts).
 * The runs are real processes making their folders with the CLI's own code, in a TMPDIR of the test's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { CLI_BUILD, ROOT, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** A process that makes a temporary folder as the CLI does, puts a file in it, says where, and waits. */
async function holder(tmp: string): Promise<{ child: ChildProcess; dir: string }> {
  const module = pathToFileURL(join(CLI_BUILD, 'util', 'temp-dir.js')).href;
  const script = `import { makeTempDirSync } from ${JSON.stringify(module)};
import { writeFileSync } from 'node:fs';
const dir = makeTempDirSync('sort');
writeFileSync(dir + '/run-0', 'x');
console.log(dir);
setInterval(() => {}, 60_000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  return { child, dir: line.toString().trim() };
}

it('the next command removes the folders of a run killed with SIGKILL, and keeps a live run\'s, another host\'s and an unmarked one', async () => {
  const tmp = tempDir('wds-sweep-');
  const [killed, live] = [await holder(tmp), await holder(tmp)];
  expect(killed.dir.startsWith(join(tmp, 'wds-files-sort-'))).toBe(true);
  killed.child.kill('SIGKILL');
  await once(killed.child, 'exit');
  expect(existsSync(join(killed.dir, 'run-0'))).toBe(true);
  // A folder of a run on another machine sharing the folder, and one of a run that has not marked it yet.
  const elsewhere = join(tmp, 'wds-files-sort-elsewhere');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, '.wds-owner'), JSON.stringify({ pid: killed.child.pid, host: 'another-host.example' }));
  const unmarked = join(tmp, 'wds-files-manifest-unmarked');
  mkdirSync(unmarked);

  const run = await runCli(['verify', join(tmp, 'no-such-export')], { TMPDIR: tmp });
  expect(run.code, run.stderr).toBe(1);
  expect(existsSync(killed.dir)).toBe(false);
  expect(existsSync(join(live.dir, 'run-0'))).toBe(true);
  expect(existsSync(elsewhere)).toBe(true);
  expect(existsSync(unmarked)).toBe(true);
  expect(readdirSync(tmp).filter((name) => name.startsWith('wds-files-')).sort()).toEqual([live.dir.slice(tmp.length + 1), 'wds-files-manifest-unmarked', 'wds-files-sort-elsewhere'].sort());
});

it('every temporary folder of the CLI is made through makeTempDir, with its marker', () => {
  // A folder made otherwise has no marker: the sweep leaves it, and a killed run's stays for good.
  const src = join(ROOT, 'src');
  const unmarked = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.ts') && path !== join('util', 'temp-dir.ts') && !path.startsWith(`emulator`))
    .filter((path) => /\bmkdtemp(Sync)?\(/.test(readFileSync(join(src, path), 'utf8')));
  expect(unmarked, 'make temporary folders with makeTempDir or makeTempDirSync (src/util/temp-dir.ts)').toEqual([]);
});
