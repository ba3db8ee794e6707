/**
 * Retention as restic's forget tests it: a table of snapshot dates, and for each policy the
 * snapshots it keeps, worked out by hand from the calendar (ISO weeks: 2025-12-31 is in 2026-W01,
 * 2026-03-08 a Sunday ends W10). Then forgetSnapshots on a real archive folder: a dry run removes
 * nothing, a real one removes exactly the snapshots listed, later snapshots keep their files
 * (links of the removed ones), and `.partial` folders stay.
 */
import { existsSync } from 'node:fs';
import { link, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyRetention, retentionPolicySchema, type RetentionPolicy } from '../../src/archive/retention.js';
import { forgetSnapshots } from '../../src/archive/forget.js';
import { parseSnapshotId } from '../../src/archive/store.js';
import { tempDir } from '../helpers/export.js';

const INCOMPLETE = new Set(['2026-03-10T120000', '2026-03-11T050000']);
const IDS = [
  '2025-12-28T040000', // 2025-W52, December 2025
  '2025-12-31T040000', // 2026-W01, December 2025
  '2026-01-04T040000', // 2026-W01
  '2026-01-15T040000', // W03
  '2026-02-01T040000', // W05
  '2026-02-20T040000', // W08
  '2026-03-01T040000', // W09 (a Sunday)
  '2026-03-02T040000', // W10
  '2026-03-02T160000', // W10, the same day later
  '2026-03-08T040000', // W10 (a Sunday)
  '2026-03-09T040000', // W11
  '2026-03-10T040000', // W11
  '2026-03-10T120000', // incomplete, older than the newest complete
  '2026-03-11T040000', // W11: the newest complete
  '2026-03-11T050000', // incomplete, newer than the newest complete
];
const snapshots = IDS.map((id) => ({ id, time: parseSnapshotId(id)!.time, complete: !INCOMPLETE.has(id) }));
const day = (d: string): string => `2026-${d}T040000`;

const TABLE: [string, RetentionPolicy, string[]][] = [
  ['keep_last 3', { keep_last: 3 }, [day('03-11'), day('03-10'), day('03-09')]],
  ['keep_daily 5: the newest of each day', { keep_daily: 5 }, [day('03-11'), day('03-10'), day('03-09'), day('03-08'), '2026-03-02T160000']],
  ['keep_weekly 2', { keep_weekly: 2 }, [day('03-11'), day('03-08')]],
  ['keep_weekly 4', { keep_weekly: 4 }, [day('03-11'), day('03-08'), day('03-01'), day('02-20')]],
  ['keep_monthly 3', { keep_monthly: 3 }, [day('03-11'), day('02-20'), day('01-15')]],
  ['keep_yearly 2', { keep_yearly: 2 }, [day('03-11'), '2025-12-31T040000']],
  ['keep_monthly 1: the newest complete alone', { keep_monthly: 1 }, [day('03-11')]],
  ['keep_weekly 20: every week that has one', { keep_weekly: 20 }, [day('03-11'), day('03-08'), day('03-01'), day('02-20'), day('02-01'), day('01-15'), day('01-04'), '2025-12-28T040000']],
  ['last 2, daily 3, weekly 3, monthly 2', { keep_last: 2, keep_daily: 3, keep_weekly: 3, keep_monthly: 2 }, [day('03-11'), day('03-10'), day('03-09'), day('03-08'), day('03-01'), day('02-20')]],
  ['last 0 and daily 0: no rule', { keep_last: 0, keep_daily: 0 }, IDS.filter((id) => !INCOMPLETE.has(id)).reverse()],
];

describe('retention on a table of snapshot dates', () => {
  it.each(TABLE)('%s', (_name, policy, completeKept) => {
    const { keep, remove } = applyRetention(snapshots, policy);
    const kept = keep.map((k) => k.id);
    const empty = Object.values(policy).every((n) => !n);
    // The newer incomplete snapshot always stays; the older one goes unless no rule is given.
    const expected = ['2026-03-11T050000', ...completeKept, ...(empty ? ['2026-03-10T120000'] : [])];
    expect(new Set(kept)).toEqual(new Set(expected));
    expect(kept.length).toBe(expected.length);
    expect(remove.map((r) => r.id).sort()).toEqual(IDS.filter((id) => !expected.includes(id)).sort());
    expect(kept).toContain('2026-03-11T040000');
  });

  it('ISO weeks across the new year: 2025-12-31 and 2026-01-04 are one week', () => {
    const three = snapshots.slice(0, 3);
    expect(applyRetention(three, { keep_weekly: 2 }).keep.map((k) => k.id)).toEqual(['2026-01-04T040000', '2025-12-28T040000']);
  });

  it('the newest complete snapshot stays however many incomplete ones follow it', () => {
    const list = [
      { id: '2026-03-01T040000', time: new Date('2026-03-01T04:00:00Z'), complete: true },
      { id: '2026-03-02T040000', time: new Date('2026-03-02T04:00:00Z'), complete: false },
      { id: '2026-03-03T040000', time: new Date('2026-03-03T04:00:00Z'), complete: false },
    ];
    const { keep, remove } = applyRetention(list, { keep_last: 1 });
    expect(keep.map((k) => k.id)).toEqual(['2026-03-03T040000', '2026-03-02T040000', '2026-03-01T040000']);
    expect(remove).toEqual([]);
  });


  it('runs started in one second go by their same-second number: a held-back run after the newest complete one stays', () => {
    const at = new Date('2026-03-01T04:00:00Z');
    const list = [
      { id: '2026-03-01T040000', time: at, complete: true },
      { id: '2026-03-01T040000-2', time: at, complete: false, held: true },
      { id: '2026-03-01T040000-10', time: at, complete: false },
      { id: '2026-03-01T040000-9', time: at, complete: true },
    ];
    const { keep, remove } = applyRetention(list, { keep_last: 1 });
    // -10 is newer than -9 (numbers, not text); -9 is the newest complete; -2 and the first are older than it.
    expect(keep.map((k) => k.id)).toEqual(['2026-03-01T040000-10', '2026-03-01T040000-9']);
    expect(remove.map((r) => r.id)).toEqual(['2026-03-01T040000-2', '2026-03-01T040000']);
    const heldAfter = applyRetention(list.slice(0, 2), { keep_last: 1 });
    expect(heldAfter.keep.map((k) => k.id)).toEqual(['2026-03-01T040000-2', '2026-03-01T040000']);
    expect(heldAfter.remove).toEqual([]);
  });
  it('a policy with a negative or fractional count, or an unknown rule, is refused', () => {
    expect(retentionPolicySchema.safeParse({ keep_daily: -1 }).success).toBe(false);
    expect(retentionPolicySchema.safeParse({ keep_daily: 1.5 }).success).toBe(false);
    expect(retentionPolicySchema.safeParse({ keep_hourly: 3 }).success).toBe(false);
  });
});

describe('forgetSnapshots on an archive folder', () => {
  async function makeArchive(): Promise<string> {
    const archive = tempDir('wds-forget-');
    let previous: string | null = null;
    for (const id of ['2026-03-01T040000', '2026-03-02T040000', '2026-03-03T040000', '2026-03-04T040000']) {
      const dir = join(archive, 'snapshots', id);
      await mkdir(join(dir, 'photos'), { recursive: true });
      // The first snapshot's photo is linked by every later one, as an archive run does.
      if (previous) await link(join(archive, 'snapshots', previous, 'photos', 'E1.jpg'), join(dir, 'photos', 'E1.jpg'));
      else await writeFile(join(dir, 'photos', 'E1.jpg'), 'photo bytes');
      const complete = id !== '2026-03-03T040000';
      await writeFile(join(dir, 'snapshot.json'), JSON.stringify({
        pipeline: 'p', started_at: `${id}Z`, finished_at: `${id}Z`, complete, previous,
        counts: { files: 1, new: previous ? 0 : 1, changed: 0, unchanged: previous ? 1 : 0, deleted: 0, failed: 0 }, bytes: { total: 11, new: previous ? 0 : 11 },
      }));
      previous = id;
    }
    await mkdir(join(archive, 'snapshots', '2026-03-05T040000.partial'));
    await writeFile(join(archive, 'latest'), '2026-03-04T040000\n');
    return archive;
  }

  it('a dry run lists what it would remove and removes nothing', async () => {
    const archive = await makeArchive();
    const result = await forgetSnapshots(archive, { keep_last: 1 }, { dryRun: true });
    expect(result.keep).toEqual(['2026-03-04T040000']);
    expect(result.remove).toEqual(['2026-03-03T040000', '2026-03-02T040000', '2026-03-01T040000']);
    expect((await readdir(join(archive, 'snapshots'))).length).toBe(5);
  });

  it('removes exactly those snapshots; the kept one keeps its linked file; .partial and latest stay', async () => {
    const archive = await makeArchive();
    const result = await forgetSnapshots(archive, { keep_last: 2 });
    // The incomplete 03-03 is older than the newest complete, and goes.
    expect(result.keep).toEqual(['2026-03-04T040000', '2026-03-02T040000']);
    expect(result.remove).toEqual(['2026-03-03T040000', '2026-03-01T040000']);
    expect((await readdir(join(archive, 'snapshots'))).sort()).toEqual(['2026-03-02T040000', '2026-03-04T040000', '2026-03-05T040000.partial']);
    expect(await readFile(join(archive, 'snapshots', '2026-03-04T040000', 'photos', 'E1.jpg'), 'utf8')).toBe('photo bytes');
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe('2026-03-04T040000');
    expect(existsSync(join(archive, 'snapshots', '2026-03-01T040000'))).toBe(false);
  });
});
