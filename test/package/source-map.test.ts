/**
 * The README's map of src/ (its "Where the code lives" block) names every folder of src/ once and
 * no folder that is gone, so a newcomer can trust it as restic's doc.go files are trusted.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli-process.js';

function folders(dir: string, rel: string): string[] {
  const found = [`${rel}/`];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) found.push(...folders(join(dir, entry.name), `${rel}/${entry.name}`));
  }
  return found;
}

describe('the README map of src/', () => {
  it('has one line for each folder of src/ and none for a folder that is not there', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const block = /Where the code lives[^\n]*\n(?:[^\n]*\n)*?```text\n([\s\S]*?)```/.exec(readme);
    expect(block, 'README.md has no "Where the code lives" block').not.toBeNull();
    const mapped = block![1]!.split('\n').filter((line) => line.trim()).map((line) => line.split(/\s+/)[0]!);
    const actual = folders(join(ROOT, 'src'), 'src').filter((folder) => folder !== 'src/');
    expect([...mapped].sort()).toEqual([...actual].sort());
    expect(new Set(mapped).size).toBe(mapped.length);
  });
});
