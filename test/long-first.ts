/**
 * The order the suite's files start in: those that take a minute or more first, longest first,
 * then the rest as vitest sorts them. On a clean clone vitest has no durations of earlier runs and
 * keeps the files' order, and the 4-minute export of 50,000 files started last made the suite's
 * last minutes one file on one worker.
 */
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** By their time in a CI rehearsal (clean clone, quiet machine), longest first. */
export const LONG_FILES = [
  'test/export/flat-memory.test.ts',
  'test/import/flat-memory.test.ts',
  'test/import/lost-answer.test.ts',
  'test/fleet/fleet.test.ts',
  'test/archive/readers-memory.test.ts',
  'test/fleet/webhooks.test.ts',
  'test/import/import-interrupt.test.ts',
  'test/readme.test.ts',
  'test/fleet/cron.test.ts',
  'test/fleet/import-beside.test.ts',
  'test/archive/flat-memory.test.ts',
  'test/archive/bucket/bucket-commands.test.ts',
  'test/package/pack.test.ts',
];

export class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    // A file renamed or gone would silently lose its place: say so.
    const gone = LONG_FILES.filter((file) => !existsSync(join(root, file)));
    if (gone.length) throw new Error(`test/long-first.ts names files that are not there: ${gone.join(', ')}`);
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const at = LONG_FILES.indexOf(relative(root, spec.moduleId).split('\\').join('/'));
      return at < 0 ? LONG_FILES.length : at;
    };
    return sorted.map((spec, i) => ({ spec, i })).sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i).map(({ spec }) => spec);
  }
}
