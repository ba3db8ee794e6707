/**
 * The journal's table of files applied, which goes to an unlinked temporary file once it grows:
 * what it answers is what a Map would, whether the line asked for is in memory or on disk, after
 * a target is applied again, and after it is cleared; and it leaves nothing on disk.
 */
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { AppliedTable, type AppliedFile } from '../../src/stages/import/journal/applied-table.js';

const target = (n: number): string => `attachment:2:1306:G${String(n).padStart(6, '0')}:certificate-${n % 3}.pdf`;
const ownTemps = (): string[] => readdirSync(tmpdir()).filter((name) => name.startsWith('wds-files-journal'));

describe('the journal\'s table of files applied', () => {
  it('answers as a Map does for 20,000 targets, most of them on disk, each applied twice and some seen', () => {
    const before = ownTemps();
    const table = new AppliedTable();
    const map = new Map<string, AppliedFile>();
    const set = (key: string, applied: AppliedFile): void => {
      table.set(key, applied);
      map.set(key, applied);
    };
    for (let n = 0; n < 20_000; n += 1) set(target(n), { sha256: `${n}`.padStart(64, 'a'), at: '2026-12-01T01:00:00.000Z' });
    for (let n = 0; n < 20_000; n += 3) set(target(n), { sha256: `${n}`.padStart(64, 'b'), at: '2026-12-02T01:00:00.000Z', updated_at: '2026-12-02 10:00:00' });
    // A name with quotes and characters outside ASCII reads back as written.
    set('attachment:2:1306:G000001:見積 "final".pdf', { sha256: 'c'.repeat(64), at: '2026-12-03T01:00:00.000Z' });
    expect(table.size).toBe(map.size);
    for (const [key, applied] of map) expect(table.get(key)).toEqual(applied);
    expect(table.get(target(20_000))).toBeUndefined();
    expect(new Map(table.entries())).toEqual(map);
    // Nothing of it is left as a file: the file was unlinked when made.
    expect(ownTemps()).toEqual(before);

    table.clear();
    expect(table.size).toBe(0);
    expect(table.get(target(1))).toBeUndefined();
    table.set(target(1), { sha256: 'd'.repeat(64), at: 'x' });
    expect([...table.entries()]).toEqual([[target(1), { sha256: 'd'.repeat(64), at: 'x' }]]);
    table.close();
  });
});
