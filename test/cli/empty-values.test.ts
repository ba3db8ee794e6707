/**
 * An option typed without its value, or an empty argument where a path goes (`"$DIR"` with DIR
 * unset in a script): yargs gives an empty string, which a path takes as the working folder. The
 * built CLI refuses each as a usage error naming it, and the working folder is left as it was.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { finished, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

describe('an empty value', () => {
  it.each([
    [['photos', 'export', '--out'], '--out needs a value'],
    [['photos', 'export', '-o'], '-o needs a value'],
    [['attachments', 'export', '--out='], '--out needs a value'],
    [['photos', 'export', '--out', 'x', '--report'], '--report needs a value'],
    [['photos', 'import', '', '--emulator'], 'the source argument is empty'],
    [['verify', ''], 'the target argument is empty'],
  ])('%j: exit 2, named, and nothing written to the working folder', async (args, message) => {
    const cwd = tempDir('wds-empty-');
    const run = await finished(spawnCli(args, {}, cwd));
    expect(run.code, run.stdout + run.stderr).toBe(2);
    expect(run.stderr).toContain(`wds-files: ${message}`);
    expect(readdirSync(cwd)).toEqual([]);
  });
});
