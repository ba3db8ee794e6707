/**
 * Two runs with the same pid (each pid 1 in its own container) compacting one shared journal each
 * write their own temporary file, so neither truncates the other's and the journal stays whole.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ImportJournal } from '../../src/stages/import/journal/journal.js';
import { journalLockOf } from '../../src/stages/import/journal/file.js';
import { tempDir } from '../helpers/export.js';
import { CODES, history } from '../helpers/journal-history.js';

const ROOT = resolve(import.meta.dirname, '../..');
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));


/**
 * A run as pid 1 on a host of its own (as in a container): it reads the journal, notes a line as
 * another run would after that read, says "ready", and then sends its first request, which compacts.
 */
const CHILD = `
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { appendFileSync } from 'node:fs';
const [folder, host, label, target] = process.argv.slice(2);
Object.defineProperty(process, 'pid', { value: 1 });
const os = createRequire(import.meta.url)('node:os');
os.hostname = () => host;
syncBuiltinESMExports();
const { ImportJournal } = await import(${JSON.stringify(join(ROOT, 'src/stages/import/journal/journal.ts'))});
const journal = ImportJournal.open('nightly-key', folder);
appendFileSync(journal.path, JSON.stringify({ t: 'seen', target, sha256: 'sha-' + target.slice(6) + '-19', updated_at: 'seen by ' + label }) + '\\n');
process.stdout.write('ready\\n');
journal.sending('photo', 'update', [{ code: 'B-' + label, sha256: label, before: null }]);
`;

function startRun(script: string, folder: string, host: string, label: string, target: string): { ready: Promise<void>; done: Promise<number | null>; stderr: () => string; kill: () => void } {
  const child = spawn(process.execPath, ['--import', 'tsx', script, folder, host, label, target], { cwd: ROOT });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const ready = new Promise<void>((res, rej) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      if (stdout.includes('ready')) res();
    });
    child.on('exit', () => rej(new Error(`the ${label} run ended before it was ready: ${stderr}`)));
  });
  const done = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  ready.catch(() => undefined);
  return { ready, done, stderr: () => stderr, kill: () => child.kill('SIGKILL') };
}

describe('runs with the same pid compacting one journal', () => {
  it('name their temporary files by their process token, not only by the pid', async () => {
    const path = join(tempDir('wds-journal-'), 'journal-x.jsonl');
    vi.resetModules();
    const one = await import('../../src/stages/import/journal/file.js');
    vi.resetModules();
    const two = await import('../../src/stages/import/journal/file.js');
    expect(one.PROCESS_TOKEN).not.toBe(two.PROCESS_TOKEN);
    expect(one.compactionTempOf(path)).not.toBe(two.compactionTempOf(path));
  });

  it('do not write into each other\'s temporary file: the journal that the first renames into place reads whole', async () => {
    const folder = tempDir('wds-journal-');
    const path = ImportJournal.open('nightly-key', folder).path;
    history(path, 20);
    const script = join(tempDir('wds-journal-run-'), 'run.mts');
    writeFileSync(script, CHILD);
    // The lock is held here, so that both runs write their compacted files and then wait for it.
    const lock = journalLockOf(path);
    writeFileSync(lock, `${process.pid} ${hostname()} this-test abc\n`);
    const temps = (): string[] => readdirSync(folder).filter((n) => n.includes('.compacting-'));

    const a = startRun(script, folder, 'host-a', 'a', 'photo:A0001');
    await a.ready;
    while (!temps().length) await pause(10);
    await pause(300);
    // The second run reads the journal with the first one's line in it, so its compacted file differs.
    const b = startRun(script, folder, 'host-b', 'b', 'photo:A0002');
    await b.ready;
    await pause(500);
    // The second run stops while it waits for the lock, so that the first one renames its file
    // before the second gets the lock, as it would had it been first to get it.
    b.kill();
    await b.done;
    rmSync(lock);
    expect(await a.done, a.stderr()).toBe(0);

    const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    const later = ImportJournal.open('nightly-key', folder);
    for (const code of CODES) expect(later.applied(`photo:${code}`)).toMatchObject({ sha256: `sha-${code}-19` });
    expect(later.applied('photo:A0001')?.updated_at).toBe('seen by a');
    expect(later.applied('photo:A0002')?.updated_at).toBe('seen by b');
    expect(lines.map((l) => JSON.parse(l) as { t: string; files?: { code: string }[] }).filter((l) => l.t === 'send').map((l) => l.files![0]!.code).sort())
      .toEqual(['B-a']);
  });

  it('still remove the temporary files that killed runs left, and leave those of a run that may be live', () => {
    const folder = tempDir('wds-journal-');
    const path = ImportJournal.open('nightly-key', folder).path;
    history(path, 20);
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const temp = (suffix: string): string => `.${path.split('/').at(-1)}.compacting-${suffix}`;
    const leftovers = [`${dead}-0123456789abcdef`, `${dead}`, `${process.pid}-0123456789abcdef`, `${process.pid}`];
    for (const name of leftovers) writeFileSync(join(folder, temp(name)), 'partial');
    // Left by earlier processes with this pid: old enough that no run still waits to rename them.
    const old = new Date(Date.now() - 10 * 60_000);
    for (const name of leftovers.slice(2)) utimesSync(join(folder, temp(name)), old, old);
    // Another run with this pid (in another container) that has just written its file.
    writeFileSync(join(folder, temp(`${process.pid}-fedcba9876543210`)), 'in progress');

    ImportJournal.open('nightly-key', folder).sending('photo', 'update', [{ code: 'A0001', sha256: 'new', before: null }]);
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean)).toHaveLength(6);
    expect(readdirSync(folder).filter((n) => n.includes('.compacting-'))).toEqual([temp(`${process.pid}-fedcba9876543210`)]);
  });
});
