/**
 * The import journal's file (DESIGN.md section 8) as a killed run leaves it: what a later run
 * reads back, a last line cut short by a crash, requests of runs that are gone against those of a
 * run still going, and where the file lives.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ImportJournal, targetOf } from '../../src/stages/import/journal/journal.js';
import { stateFolder } from '../../src/util/xdg.js';
import { tempDir } from '../helpers/export.js';

const photo = (code: string, sha256: string) => ({ code, sha256, before: null });

/** The id of a process that has ended. */
function deadPid(): number {
  const ended = spawnSync(process.execPath, ['-e', '0']);
  return ended.pid!;
}

describe('the import journal', () => {
  it('a later run reads what was applied, also after a last line cut short, and its next line stays whole', async () => {
    const folder = tempDir('wds-journal-');
    const first = ImportJournal.open('key-1', folder);
    const id = await first.sending('photo', 'register', [photo('A0001', 'aa'), photo('A0002', 'bb')]);
    await first.task(id, 41);
    await first.settled(id, [true, false], 'task 41 ended OK');
    await first.seen(targetOf('photo', { code: 'A0001' }), 'aa', '2026-04-01 10:00:05');
    // Readable by its owner only.
    expect(statSync(first.path).mode & 0o777).toBe(0o600);
    // A crash in the middle of a line.
    appendFileSync(first.path, '{"t":"send","id":"x-0","kind":"pho');

    const second = ImportJournal.open('key-1', folder);
    expect(second.path).toBe(first.path);
    expect(second.applied('photo:A0001')).toEqual({ sha256: 'aa', at: expect.any(String), updated_at: '2026-04-01 10:00:05' });
    expect(second.applied('photo:A0002')).toBeUndefined();
    expect(second.unsettled('photo')).toEqual([]);
    const next = await second.sending('photo', 'update', [photo('A0002', 'cc')]);
    await second.settled(next, [true], 'task 42 ended OK');

    const third = ImportJournal.open('key-1', folder);
    expect(third.applied('photo:A0002')).toMatchObject({ sha256: 'cc' });
    const lines = readFileSync(first.path, 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    // Every line but the cut one reads as JSON.
    expect(lines.slice(0, -1).filter((l) => { try { JSON.parse(l); return false; } catch { return true; } })).toHaveLength(1);
  });

  it('requests left open by a run that is gone are unsettled; those of a run still going are not; other companies have their own file', async () => {
    const folder = tempDir('wds-journal-');
    const journal = ImportJournal.open('key-2', folder);
    const gone = { t: 'send', id: 'gone-0', kind: 'photo', route: 'register', at: new Date().toISOString(), pid: deadPid(), host: hostname(), files: [photo('A0003', 'dd')] };
    const going = { ...gone, id: 'going-0', pid: process.pid };
    const elsewhere = { ...gone, id: 'elsewhere-0', kind: 'attachment' };
    appendFileSync(journal.path, `${[gone, going, elsewhere].map((l) => JSON.stringify(l)).join('\n')}\n`);
    appendFileSync(journal.path, `${JSON.stringify({ t: 'task', id: 'gone-0', task_id: 7 })}\n`);

    const later = ImportJournal.open('key-2', folder);
    expect(later.unsettled('photo').map((r) => ({ id: r.id, task_id: r.task_id }))).toEqual([{ id: 'gone-0', task_id: 7 }]);
    expect(later.unsettled('attachment').map((r) => r.id)).toEqual(['elsewhere-0']);
    expect(ImportJournal.open('key-3', folder).unsettled('photo')).toEqual([]);
  });

  it('lives under $XDG_STATE_HOME/wds-files, named by a hash of the consumer key', async () => {
    const saved = process.env.XDG_STATE_HOME;
    process.env.XDG_STATE_HOME = '/somewhere/state';
    try {
      expect(stateFolder()).toBe('/somewhere/state/wds-files');
    } finally {
      if (saved === undefined) delete process.env.XDG_STATE_HOME;
      else process.env.XDG_STATE_HOME = saved;
    }
    const folder = tempDir('wds-journal-');
    const path = ImportJournal.open('a-consumer-key', folder).path;
    expect(path).toMatch(/journal-[0-9a-f]{16}\.jsonl$/);
    expect(path).not.toContain('a-consumer-key');
    expect(join(path, '..')).toBe(folder);
  });
});
