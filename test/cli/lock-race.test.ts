/**
 * The lock module under a real race: several processes, started and loaded first, take one
 * lock, free or left stale by a run that ended (dead pid) or by another host's run that went
 * away (old heartbeat). Exactly one holds it each time; the others are refused naming that one; and nothing of the takeover (claims,
 * moved-aside files) is left beside the lock once it is released.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/export.js';
import { ROOT } from '../helpers/cli-process.js';

const CONTENDERS = 6;

/**
 * Each contender loads the lock module, says it is ready, and waits for the instant the parent
 * sends (once all are ready: a contender slow to start under load would otherwise come after the
 * winner let go, and win in turn); then it takes the lock, holds it 1.5 s and prints what happened.
 */
const contender = `
import { acquireTargetLock } from './src/util/target-lock.ts';
import { once } from 'node:events';
const [file] = process.argv.slice(1);
console.log('ready');
const [at] = await once(process.stdin, 'data');
await new Promise((r) => setTimeout(r, Number(String(at).trim()) - Date.now()));
try {
  const lock = await acquireTargetLock(file, { command: 'contender' });
  console.log(JSON.stringify({ won: process.pid, tookOver: lock.tookOver }));
  await new Promise((r) => setTimeout(r, 1500));
  await lock.release();
} catch (error) {
  console.log(JSON.stringify({ refused: error.message }));
}
process.stdin.destroy();`;

async function race(file: string): Promise<Array<{ won?: number; tookOver?: string | null; refused?: string }>> {
  const contenders = Array.from({ length: CONTENDERS }, () => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', contender, file], { cwd: ROOT });
    let out = '';
    let err = '';
    let readied!: () => void;
    const ready = new Promise<void>((done) => (readied = done));
    const result = new Promise<{ won?: number; refused?: string }>((done, fail) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.startsWith('ready\n')) readied();
      });
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.on('error', fail);
      child.on('close', () => {
        const line = out.replace(/^ready\n/, '').trim();
        if (line) done(JSON.parse(line));
        else fail(new Error(err));
      });
    });
    return { child, ready, result };
  });
  const results = Promise.all(contenders.map((c) => c.result));
  // A contender that fails to start fails the race rather than leaving the others waiting.
  await Promise.race([Promise.all(contenders.map((c) => c.ready)), results]);
  const at = Date.now() + 300;
  for (const { child } of contenders) child.stdin.write(`${at}\n`);
  return results;
}

function leftBy(holder: { pid: number; host: string }, file: string, ageMs = 0): void {
  writeFileSync(file, JSON.stringify({ ...holder, command: 'an earlier run', started_at: new Date().toISOString(), token: 'earlier' }));
  const at = new Date(Date.now() - ageMs);
  utimesSync(file, at, at);
}

const deadPid = (): number => Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);

// The other host's lock is 150 s old when written; contenders slow to start under load see it older.
const cases: Array<[string, (file: string) => void, RegExp | null]> = [
  ['free', () => undefined, null],
  ['left by a run that ended', (file) => leftBy({ pid: deadPid(), host: hostname() }, file), /had ended/],
  ['left by a run on another host that went away', (file) => leftBy({ pid: 1, host: 'backup-host-2' }, file, 150_000), /pid 1 on backup-host-2 had not renewed it for (?:1[5-9]\d|[2-9]\d\d|\d{4,}) s/],
];

it.each(cases)('%s: of six contenders at once, exactly one holds the lock', async (_name, prepare, takeover) => {
  const dir = tempDir();
  const file = join(dir, 'target.zip.lock');
  prepare(file);
  const results = await race(file);
  const winners = results.filter((r) => r.won !== undefined);
  expect(winners, JSON.stringify(results)).toHaveLength(1);
  const winner = winners[0]!;
  // The winner may have come after another contender removed the stale lock: then it saw none.
  if (takeover && winner.tookOver !== null) expect(winner.tookOver).toMatch(takeover);
  if (!takeover) expect(winner.tookOver).toBeNull();
  for (const r of results.filter((x) => x !== winner)) expect(r.refused).toContain(`is held by pid ${winner.won} on ${hostname()} (contender)`);
  expect(readdirSync(dir)).toEqual([]);
}, 30_000);
