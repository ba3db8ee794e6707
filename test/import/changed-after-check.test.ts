/**
 * A file changed or deleted between its check and its request: the real CLI, two photos a
 * request apart (one to register, one to replace) (one update request per few seconds on the client's side), and the file of the
 * request that waits is replaced or removed while it waits. Its bytes are not the ones checked,
 * so it is not sent: the request is cut off, the member's photo stays as it was, the report says
 * why, and the rerun checks and sends the file as it is now (the journal did not take the
 * checked bytes as applied).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, spawnCli, stderrMatching } from '../helpers/cli-process.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import { noisyJpeg, photoHashes, sha256, writeFiles } from './photo-helpers.js';

const emu = useEmulator({ seed: 'samples/company', maintenance: false });

/** A member without a photo and one with a photo: a request each, one update request a window. */
async function twoMembers(e: TestEmulator, skip: number): Promise<[string, string]> {
  const state = (await e.control('GET', '/state')) as EmulatorState;
  const codes = (has: boolean): string[] => state.members.filter((m) => (m.photo !== null) === has).map((m) => m.code).sort();
  return [codes(false)[skip]!, codes(true)[skip]!];
}

interface Report { items: { code: string; outcome: string; reason?: string; sha256?: string }[] }

/** Runs the import until its second request waits for the window, does `meanwhile` to the waiting file, and ends the run. */
async function importWhileWaiting(codes: [string, string], meanwhile: (path: string, code: string) => Promise<void>) {
  const files = { [`${codes[0]}.jpg`]: await noisyJpeg(40, 40, 11), [`${codes[1]}.jpg`]: await noisyJpeg(48, 48, 12) };
  const dir = await writeFiles(tempDir('wds-changed-'), files);
  const report = join(tempDir('wds-changed-report-'), 'report.json');
  const env = { XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-changed-state-')), WDS_CLIENT_LIMITS: 'update=1/5s' };
  const child = spawnCli(['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())], env);
  const run = finished(child);
  await stderrMatching(child, /waiting \d+\.\d s: 1 update requests? per/, 60_000);
  // The lighter request goes first; the other waits.
  const held = await photoHashes(emu());
  const waiting = held.get(codes[0]) === sha256(files[`${codes[0]}.jpg`]!) ? codes[1] : codes[0];
  const before = held.get(waiting) ?? null;
  await meanwhile(join(dir, `${waiting}.jpg`), waiting);
  const ended = await run;
  return { ended, waiting, before, dir, env, report: JSON.parse(readFileSync(report, 'utf8')) as Report };
}

describe('a photo that is not what was checked when its request leaves', () => {
  it('is not sent when it changed, and the rerun sends it as it is now', async () => {
    const codes = await twoMembers(emu(), 0);
    const replacement = await noisyJpeg(56, 56, 13);
    const { ended, waiting, before, dir, env, report } = await importWhileWaiting(codes, async (path) => writeFileSync(path, replacement));

    expect(ended.code, ended.stderr).toBe(3);
    const item = report.items.find((i) => i.code === waiting)!;
    expect(item.outcome).toBe('failed');
    expect(item.reason).toContain(`${waiting}.jpg changed since its check: not sent`);
    // The service has neither the checked bytes nor the new ones.
    expect((await photoHashes(emu())).get(waiting) ?? null).toBe(before);
    expect(report.items.find((i) => i.code !== waiting)!.outcome).toBe('ok');

    const rerun = await finished(spawnCli(['photos', 'import', dir, '--no-trim', ...connectionArgs(emu())], { XDG_STATE_HOME: env.XDG_STATE_HOME }));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect((await photoHashes(emu())).get(waiting)).toBe(sha256(replacement));
  }, 90_000);

  it('is not sent when it was deleted, and the report names it', async () => {
    const codes = await twoMembers(emu(), 2);
    const { ended, waiting, before } = await importWhileWaiting(codes, async (path) => rmSync(path));
    expect(ended.code, ended.stderr).toBe(3);
    expect(ended.stdout + ended.stderr).toMatch(new RegExp(`${waiting}\\.jpg could not be read again: .*ENOENT.*: not sent`));
    expect((await photoHashes(emu())).get(waiting) ?? null).toBe(before);
  }, 90_000);
});
