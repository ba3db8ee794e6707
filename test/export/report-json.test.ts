/**
 * The --report file is written in parts (RunReport.jsonParts) instead of one string of every item:
 * its text stays exactly what JSON.stringify made of the whole report, redaction included, for
 * reports of no item, one, and more than a part holds.
 */
import { describe, expect, it } from 'vitest';
import { RunReport, type Outcome } from '../../src/stages/report.js';
import { redactValue, registerSecret } from '../../src/util/redact.js';

function reportOf(items: number): RunReport {
  const report = new RunReport('photos export');
  const outcomes: Outcome[] = ['ok', 'skipped', 'failed'];
  for (let i = 0; i < items; i += 1) {
    const outcome = outcomes[i % 3]!;
    report.add({
      key: `photo:E${i}`, code: `E${i}`, file_name: `Ab "quoted" ${i}.jpg`, outcome, path: `photos/E${i}.jpg`,
      ...(outcome === 'ok' ? { size: 1000 + i, sha256: 'ab'.repeat(32) } : { reason: `storage answered 503\nafter the token s3cr3t-${i % 2} was sent` }),
    });
  }
  report.notes.push('a note');
  report.finish();
  return report;
}

describe('report file', () => {
  registerSecret('s3cr3t-1');
  for (const items of [0, 1, 256, 600]) {
    it(`${items} items: the parts read as the whole report, redacted`, () => {
      const report = reportOf(items);
      const extra = { out: '/tmp/out', connection: { consumer_secret: 'hidden', password: 'also hidden' } };
      const text = [...report.jsonParts(extra, redactValue)].join('');
      expect(text).toBe(`${JSON.stringify(redactValue(report.toJSON(extra)), null, 2)}\n`);
      const parsed = JSON.parse(text) as { items: unknown[]; connection: Record<string, string> };
      expect(parsed.items).toHaveLength(items);
      expect(text).not.toContain('hidden');
      if (items > 1) expect(text).not.toContain('s3cr3t-1');
    });
  }
});
