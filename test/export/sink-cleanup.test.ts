/**
 * A sink aborted before its first file (a fatal error at the start of a run) leaves no folder it
 * made, and never removes one that was there before it: not an empty one, not one reached through
 * `..` in the path, not one with anything in it.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/export.js';
import { FolderSink } from '../../src/sinks/folder.js';
import { ZipSink } from '../../src/sinks/zip.js';

describe('sink cleanup on abort', () => {
  it('a folder export: the folders it made go, the ones that were there stay', async () => {
    const base = tempDir();
    const made = await FolderSink.create(join(base, 'made', 'deeper', 'out'));
    await made.abort();
    expect(existsSync(join(base, 'made'))).toBe(false);

    mkdirSync(join(base, 'empty-before'));
    // As typed, not normalised: join() would drop the `never/..`.
    const through = await FolderSink.create(`${base}/never/../empty-before/out`);
    await through.abort();
    expect(readdirSync(base).sort()).toEqual(['empty-before']);
    expect(readdirSync(join(base, 'empty-before'))).toEqual([]);

    mkdirSync(join(base, 'with-notes'));
    writeFileSync(join(base, 'with-notes', 'notes.txt'), 'kept');
    const into = await FolderSink.create(join(base, 'with-notes'));
    await into.abort();
    expect(readdirSync(join(base, 'with-notes'))).toEqual(['notes.txt']);
  });

  it('a zip export: no .partial, and the folders made for it go', async () => {
    const base = tempDir();
    const zip = await ZipSink.create(join(base, 'zips', 'sub', 'a.zip'));
    expect(readdirSync(join(base, 'zips', 'sub')).sort()).toEqual(['a.zip.partial', 'a.zip.partial.d']);
    await zip.abort();
    expect(existsSync(join(base, 'zips'))).toBe(false);

    mkdirSync(join(base, 'kept'));
    const beside = await ZipSink.create(join(base, 'kept', 'b.zip'));
    await beside.abort();
    expect(readdirSync(join(base, 'kept'))).toEqual([]);
  });
});
