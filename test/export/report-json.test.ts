/**
 * The --report file is written in parts (RunReport.jsonParts) instead of one string of every item:
 * its text stays exactly what JSON.stringify made of the whole report, redaction included, for
 * reports of no item, one, and more than a part holds.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunReport, type Outcome } from '../../src/stages/report.js';
import { redactValue, registerSecret } from '../../src/util/redact.js';

function reportOf(items: number, onDisk = false, countOnly = false): RunReport {
  const report = new RunReport('photos export');
  if (onDisk) report.keepItemsOnDisk();
  if (countOnly) report.countOnly();
  const outcomes: Outcome[] = ['ok', 'skipped', 'failed'];
  for (let i = 0; i < items; i += 1) {
    const outcome = outcomes[i % 3]!;
    report.add({
      key: `photo:E${i}`, code: `E${i}`, file_name: `Ab "quoted" ${i} 顔写真.jpg`, outcome, path: `photos/E${i}.jpg`,
      ...(outcome === 'ok' ? { size: 1000 + i, sha256: 'ab'.repeat(32) } : { reason: `storage answered 503\nafter the token s3cr3t-${i % 2} was sent` }),
    });
  }
  report.notes.push('a note');
  report.finish();
  return report;
}

/** The report's text with its duration left out: two reports made one after the other differ there. */
const timeless = (json: string): string => json.replace(/"duration_ms": \d+/, '"duration_ms": 0');

describe('report file', () => {
  registerSecret('s3cr3t-1');
  for (const [items, onDisk] of [[0, false], [1, false], [256, false], [600, false], [0, true], [255, true], [256, true], [3000, true]] as const) {
    it(`${items} items${onDisk ? ' kept on disk' : ''}: the parts read as the whole report, redacted`, () => {
      const report = reportOf(items, onDisk);
      const extra = { out: '/tmp/out', connection: { consumer_secret: 'hidden', password: 'also hidden' } };
      const text = [...report.jsonParts(extra, redactValue)].join('');
      expect(text).toBe(`${JSON.stringify(redactValue(report.toJSON(extra)), null, 2)}\n`);
      // The same text as a report that held its items in memory.
      if (onDisk) expect(timeless(text)).toBe(timeless([...reportOf(items).jsonParts(extra, redactValue)].join('')));
      const parsed = JSON.parse(text) as { items: unknown[]; connection: Record<string, string> };
      expect(parsed.items).toHaveLength(items);
      expect(text).not.toContain('hidden');
      if (items > 1) expect(text).not.toContain('s3cr3t-1');
    });
  }
});

const spillFiles = (): number => readdirSync('/proc/self/fd').filter((fd) => {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`).includes('wds-files-report-');
  } catch {
    return false;
  }
}).length;

describe('report items kept on disk', () => {
  it('holds no file once each report is closed, however many ran in the process', () => {
    const open = spillFiles();
    for (let i = 0; i < 20; i += 1) {
      const report = reportOf(600, true);
      expect(spillFiles()).toBe(open + 1);
      expect([...report.jsonParts()].join('')).toContain('"E599"');
      report.close();
      expect(spillFiles()).toBe(open);
      expect(report.counts.ok).toBe(200);
      expect(() => report.items).toThrow('was closed');
      expect(() => [...report.eachItem()]).toThrow('was closed');
    }
  });

  it('reads the file once for its items, however often they are looked at', () => {
    const report = reportOf(600, true);
    const items = report.items;
    expect(report.items).toBe(items);
    expect(items).toHaveLength(600);
    // A later item makes them read again, with it.
    report.add({ key: 'photo:late', code: 'late', file_name: 'late.jpg', outcome: 'ok', size: 1 });
    expect(report.items).toHaveLength(601);
    expect(report.items[600]!.code).toBe('late');
    report.close();
  });

  it('reads back every item in order, with counts and the first problems at hand, and leaves no file behind', () => {
    const before = readdirSync(tmpdir()).filter((name) => name.startsWith('wds-files-report-'));
    const spills = (): number => readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).includes('wds-files-report-');
      } catch {
        return false;
      }
    }).length;
    const open = spills();
    const report = reportOf(1000, true);
    // The items are in a file this process holds open, whose name is gone already.
    expect(spills()).toBe(open + 1);
    expect(readdirSync(tmpdir()).filter((name) => name.startsWith('wds-files-report-'))).toEqual(before);
    expect(report.itemCount).toBe(1000);
    expect(report.items).toEqual(reportOf(1000).items);
    expect([...report.eachItem()].map((item) => item.code)).toEqual(Array.from({ length: 1000 }, (_, i) => `E${i}`));
    expect(report.firstProblems).toHaveLength(50);
    expect(report.firstProblems.every((item) => item.outcome === 'failed')).toBe(true);
    expect(report.firstProblems[0]!.code).toBe('E2');
  });

  it('keeps the items in memory when the temporary folder cannot be written', () => {
    const tmp = process.env.TMPDIR;
    process.env.TMPDIR = join(tmpdir(), `no-such-folder-${process.pid}`, 'below');
    try {
      const report = reportOf(600, true);
      expect(report.items).toEqual(reportOf(600).items);
      expect(timeless([...report.jsonParts()].join(''))).toBe(timeless([...reportOf(600).jsonParts()].join('')));
    } finally {
      if (tmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmp;
    }
  });
});

describe('a report of counts only', () => {
  it('counts what a full report counts and keeps its first problems, without a file or the items', () => {
    const open = spillFiles();
    const full = reportOf(3000, true);
    const counted = reportOf(3000, true, true);
    expect(spillFiles()).toBe(open + 1);
    expect(counted.counts).toEqual(full.counts);
    expect(counted.bytes).toBe(full.bytes);
    expect(counted.itemCount).toBe(3000);
    expect(counted.problems).toBe(1000);
    expect(counted.firstProblems).toEqual(full.firstProblems);
    expect(counted.summary()).toMatchObject({ counts: full.counts, bytes: full.bytes });
    // Nothing pretends to be the items: a report file asked of it fails, naming why.
    expect(() => counted.items).toThrow('kept counts only');
    expect(() => [...counted.jsonParts()]).toThrow('kept counts only');
    full.close();
  });
});
