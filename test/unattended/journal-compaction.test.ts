/**
 * The import journal is compacted: a journal used night after night stays as long as what a rerun
 * needs of it (the last file applied at each target, the requests still open), not as long as
 * every run's history; what another run appends meanwhile is kept, and a lock left by a killed run
 * does not stop the next one.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ImportJournal, targetOf } from '../../src/stages/import/journal/journal.js';
import { journalLockOf } from '../../src/stages/import/journal/file.js';
import { tempDir } from '../helpers/export.js';
import { CODES, history } from '../helpers/journal-history.js';

const lineCount = (path: string): number => readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid!;

/** One night's import of new bytes for every member, as the photo import writes it. */
async function night(folder: string, n: number): Promise<void> {
  const journal = ImportJournal.open('nightly-key', folder);
  const files = CODES.map((code) => ({ code, sha256: `sha-${code}-${n}`, before: n === 0 ? null : `2026-04-01 10:00:${String(n % 60).padStart(2, '0')}` }));
  const id = await journal.sending('photo', 'update', files);
  await journal.task(id, 1000 + n);
  await journal.settled(id, files.map(() => true), `task ${1000 + n} ended OK`);
  for (const file of files) await journal.seen(targetOf('photo', file), file.sha256, `night ${n}`);
}


/** A request an earlier run sent and never learned the end of. */
function leftOpen(path: string): void {
  const send = { t: 'send', id: 'gone-0', kind: 'attachment', route: 'register', at: new Date().toISOString(), pid: deadPid(), host: hostname(),
    files: [{ code: 'A0001', sha256: 'att', sheet_id: 2, custom_field_id: 1306, file_name: 'contract.pdf', before: null }] };
  appendFileSync(path, `${JSON.stringify(send)}\n${JSON.stringify({ t: 'task', id: 'gone-0', task_id: 77 })}\n`);
}

describe('the import journal is compacted', () => {
  it('100 nightly runs leave a journal of a few dozen lines, which still knows the last bytes applied to each member and the request left open', async () => {
    const folder = tempDir('wds-journal-');
    await night(folder, 0);
    const path = ImportJournal.open('nightly-key', folder).path;
    leftOpen(path);
    let longest = 0;
    for (let n = 1; n <= 100; n += 1) {
      await night(folder, n);
      longest = Math.max(longest, lineCount(path));
    }
    // What is needed: 5 applied files, and the open request's two lines. A night adds 8 lines.
    expect(longest).toBeLessThanOrEqual(64 + 8);
    const journal = ImportJournal.open('nightly-key', folder);
    for (const code of CODES) expect(journal.applied(`photo:${code}`)).toEqual({ sha256: `sha-${code}-100`, at: expect.any(String), updated_at: 'night 100' });
    expect(journal.unsettled('attachment').map((r) => ({ id: r.id, task_id: r.task_id, files: r.files.map((f) => f.file_name) })))
      .toEqual([{ id: 'gone-0', task_id: 77, files: ['contract.pdf'] }]);
    expect(journal.unsettled('photo')).toEqual([]);
    // No lock or temporary file is left beside it; every line is whole.
    expect(readdirSync(folder)).toEqual([path.split('/').at(-1)]);
    for (const line of readFileSync(path, 'utf8').split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('lines another run appends after this one read the journal are kept by its compaction', async () => {
    const folder = tempDir('wds-journal-');
    history(ImportJournal.open('nightly-key', folder).path, 20);
    const mine = ImportJournal.open('nightly-key', folder);
    // Another run, still going, sends a request and learns its task after this run read the journal.
    const other = { t: 'send', id: 'other-0', kind: 'photo', route: 'update', at: new Date().toISOString(), pid: process.pid, host: hostname(),
      files: [{ code: 'A0009', sha256: 'nine', before: null }] };
    appendFileSync(mine.path, `${JSON.stringify(other)}\n${JSON.stringify({ t: 'task', id: 'other-0', task_id: 99 })}\n`);
    appendFileSync(mine.path, `${JSON.stringify({ t: 'end', id: 'other-0', applied: [true], how: 'task 99 ended OK' })}\n`);
    // This run's first line compacts what it read, then adds its own.
    const id = await mine.sending('photo', 'update', [{ code: 'A0001', sha256: 'new-1', before: 'night 19' }]);
    await mine.settled(id, [true], 'task 5 ended OK');
    // 5 applied files, the other run's 3 lines and this run's 2.
    expect(lineCount(mine.path)).toBe(10);

    const later = ImportJournal.open('nightly-key', folder);
    expect(later.applied('photo:A0009')).toMatchObject({ sha256: 'nine' });
    expect(later.applied('photo:A0001')).toMatchObject({ sha256: 'new-1' });
    expect(later.applied('photo:A0002')).toEqual({ sha256: 'sha-A0002-19', at: expect.any(String), updated_at: 'night 19' });
  });

  it('a journal compacted by another run since this one read it is not replaced again: nothing of it is lost', async () => {
    const folder = tempDir('wds-journal-');
    history(ImportJournal.open('nightly-key', folder).path, 20);
    const slow = ImportJournal.open('nightly-key', folder);
    const fast = ImportJournal.open('nightly-key', folder);
    const a = await fast.sending('photo', 'update', [{ code: 'A0002', sha256: 'fast', before: null }]);
    await fast.settled(a, [true], 'ok');
    const b = await slow.sending('photo', 'update', [{ code: 'A0003', sha256: 'slow', before: null }]);
    await slow.settled(b, [true], 'ok');
    const later = ImportJournal.open('nightly-key', folder);
    expect(later.applied('photo:A0002')).toMatchObject({ sha256: 'fast' });
    expect(later.applied('photo:A0003')).toMatchObject({ sha256: 'slow' });
    expect(later.applied('photo:A0004')).toMatchObject({ sha256: 'sha-A0004-19' });
  });

  it('a lock left by a run that was killed does not stop the next run, which removes it', async () => {
    const folder = tempDir('wds-journal-');
    const journal = ImportJournal.open('nightly-key', folder);
    writeFileSync(journalLockOf(journal.path), `${deadPid()} ${hostname()} abc\n`);
    const id = await journal.sending('photo', 'register', [{ code: 'A0001', sha256: 'one', before: null }]);
    await journal.settled(id, [true], 'ok');
    expect(existsSync(journalLockOf(journal.path))).toBe(false);
    expect(ImportJournal.open('nightly-key', folder).applied('photo:A0001')).toMatchObject({ sha256: 'one' });
  });

  it('a lock and a request left by an earlier process that had this very pid (as pid 1 in a container) belong to that run, not this one', async () => {
    const folder = tempDir('wds-journal-');
    const journal = ImportJournal.open('nightly-key', folder);
    const send = { t: 'send', id: 'earlier-0', kind: 'photo', route: 'update', at: new Date().toISOString(), pid: process.pid, host: hostname(), proc: 'an-earlier-process',
      files: [{ code: 'A0001', sha256: 'one', before: null }] };
    appendFileSync(journal.path, `${JSON.stringify(send)}\n`);
    writeFileSync(journalLockOf(journal.path), `${process.pid} ${hostname()} an-earlier-process abc\n`);
    const later = ImportJournal.open('nightly-key', folder);
    expect(later.unsettled('photo').map((r) => r.id)).toEqual(['earlier-0']);
    const started = Date.now();
    await later.settled('earlier-0', [true], 'task 3 ended OK, read by a later run');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(existsSync(journalLockOf(journal.path))).toBe(false);
    // This run's own requests are its own business while it runs.
    await later.sending('photo', 'update', [{ code: 'A0002', sha256: 'two', before: null }]);
    expect(ImportJournal.open('nightly-key', folder).unsettled('photo')).toEqual([]);
  });

  it('a run that saw 200,000 files applied notes them in one append', async () => {
    const folder = tempDir('wds-journal-');
    const path = ImportJournal.open('nightly-key', folder).path;
    const targets = Array.from({ length: 200_000 }, (_, i) => `photo:M${i}`);
    writeFileSync(path, targets.map((target) => `${JSON.stringify({ t: 'applied', target, sha256: `sha-${target}`, at: 'then' })}\n`).join(''));
    await ImportJournal.open('nightly-key', folder).seenAll(targets.map((target) => ({ target, sha256: `sha-${target}`, updatedAt: 'tonight' })));
    expect(lineCount(path)).toBe(400_000);
    const later = ImportJournal.open('nightly-key', folder);
    expect(later.applied('photo:M0')).toEqual({ sha256: 'sha-photo:M0', at: 'then', updated_at: 'tonight' });
    expect(later.applied('photo:M199999')).toEqual({ sha256: 'sha-photo:M199999', at: 'then', updated_at: 'tonight' });
  });
});
