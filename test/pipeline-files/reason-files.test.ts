/**
 * A drop folder's `refused/NAME.reason.txt` always says why its own file was refused: a reason
 * left from an earlier refusal (its file taken away since) and a file of the user's that bears
 * such a name are never taken for a new refusal's reason, and neither is overwritten.
 */
import { mkdir, readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineFile } from '../../src/pipeline-files/load.js';
import { runPipelineFile } from '../../src/pipeline-files/run.js';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { useEnv } from '../helpers/env.js';
import { plain, writeFiles } from '../import/photo-helpers.js';

useEnv({ XDG_STATE_HOME: tempDir('wds-reason-state-'), XDG_CACHE_HOME: tempDir('wds-reason-cache-') });
const emu = useEmulator({ seed: 'samples/company' });

const names = async (dir: string): Promise<string[]> => (await readdir(dir)).sort();

describe('drop folder reason files', () => {
  it('a stale reason and a user\'s NAME.reason.txt stay as they are; the new refusal takes a name whose reason file is free', async () => {
    const dir = tempDir('wds-reason-');
    const file = join(dir, 'p.yaml');
    await writeFile(file, [
      'name: reason-files',
      'from: { folder: drop/inbox, move: { done: drop/done, refused: drop/refused } }',
      'to: { service: photos }',
      `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
      '',
    ].join('\n'));
    const inbox = join(dir, 'drop', 'inbox');
    const refused = join(dir, 'drop', 'refused');
    // An earlier run refused a Q0001.jpg, which the user has taken away since; its reason stayed.
    await mkdir(refused, { recursive: true });
    await writeFile(join(refused, 'Q0001.jpg.reason.txt'), 'an old reason\n');
    await writeFiles(inbox, {
      'Q0001.jpg': await plain(30, 30, 1).jpeg().toBuffer(),
      'Q0002.jpg': await plain(30, 30, 2).jpeg().toBuffer(),
      // A file of the user's that bears the name of Q0002.jpg's reason; refused for its extension.
      'Q0002.jpg.reason.txt': 'my own notes\n',
    });
    const then = new Date(Date.now() - 60_000);
    for (const name of await readdir(inbox)) await utimes(join(inbox, name), then, then);

    const summary = await runPipelineFile(await loadPipelineFile(file, {}));
    expect(summary.moved).toEqual({ done: 0, refused: 3, left: 0 });
    expect(await names(inbox)).toEqual([]);
    expect(await names(refused)).toEqual([
      'Q0001 (2).jpg', 'Q0001 (2).jpg.reason.txt', 'Q0001.jpg.reason.txt',
      'Q0002 (2).jpg', 'Q0002 (2).jpg.reason.txt', 'Q0002.jpg.reason.txt', 'Q0002.jpg.reason.txt.reason.txt',
    ]);
    expect(await readFile(join(refused, 'Q0001.jpg.reason.txt'), 'utf8')).toBe('an old reason\n');
    expect(await readFile(join(refused, 'Q0001 (2).jpg.reason.txt'), 'utf8')).toContain('no member has the code Q0001');
    expect(await readFile(join(refused, 'Q0002.jpg.reason.txt'), 'utf8')).toBe('my own notes\n');
    expect(await readFile(join(refused, 'Q0002 (2).jpg.reason.txt'), 'utf8')).toContain('no member has the code Q0002');
    expect(await readFile(join(refused, 'Q0002.jpg.reason.txt.reason.txt'), 'utf8')).toContain('is not accepted for photos');
  });
});
