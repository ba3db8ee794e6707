/**
 * `wds-files photos import` run as a child process against the in-process emulator (DESIGN.md
 * section 3): exit code 3 when a file did not go in, one JSON summary on stdout with `--json`, a
 * `--report` file listing every file with its outcome and reason, the text summary without
 * `--json`, and the consumer secret never printed nor written.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { runCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, plain, sha256, writeFiles } from './photo-helpers.js';

const KEY = 'photo-cli-key';
const SECRET = 'photo-cli-secret-8d41e07b';
const emu = useEmulator({ seed: 'samples/company', consumerKey: KEY, consumerSecret: SECRET, limits: { updatesPerMinute: 10000 } });
const connection = (): string[] => ['--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET];
const printed: string[] = [];

async function photos(...args: string[]): Promise<CliRun> {
  const run = await runCli(['photos', 'import', ...args, ...connection()]);
  printed.push(run.stdout, run.stderr);
  return run;
}

let dir: string;
let files: Record<string, Buffer>;

beforeAll(async () => {
  files = {
    'A0001.jpg': await plain(40, 40, 1).jpeg().toBuffer(),
    'A0017.png': await plain(40, 40, 17).png().toBuffer(),
    'A0002.tif': await plain(40, 40, 2).tiff().toBuffer(),
    'A0003.jpg': Buffer.from('MZ\x90\x00 a renamed program', 'latin1'),
    'Q0001.jpg': await plain(40, 40, 3).jpeg().toBuffer(),
  };
  dir = await writeFiles(tempDir('wds-photos-'), files);
});

afterAll(() => {
  // Every run of this file: the secret never reached stdout or stderr.
  expect(printed.length).toBeGreaterThan(0);
  expect(printed.join('\n')).not.toContain(SECRET);
});

describe('photos import on the command line', () => {
  it('--json --report --no-trim: exit 3, one JSON summary, every file in the report', async () => {
    const report = join(tempDir('wds-report-'), 'report.json');
    const run = await photos(dir, '--json', '--no-trim', '--report', report);
    expect(run.code, run.stderr).toBe(3);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!);
    expect(summary).toMatchObject({
      command: 'photos import',
      counts: { ok: 2, converted: 1, skipped: 0, invalid: 2, conflict: 0, failed: 0 },
      requests: { register: 1, update: 1, minimum: 2, resubmitted: 0 },
    });
    expect(summary.check_ms).toEqual(expect.any(Number));
    expect(summary.waited_ms).toEqual(expect.any(Number));
    // When the first request left, counted from the start of the run: within the run's time.
    expect(summary.first_request_ms).toEqual(expect.any(Number));
    expect(summary.first_request_ms).toBeLessThanOrEqual(summary.duration_ms);

    const text = await readFile(report, 'utf8');
    expect(text).not.toContain(SECRET);
    const written = JSON.parse(text) as { items: { path: string; outcome: string; reason: string }[] };
    const outcomes = Object.fromEntries(written.items.map((i) => [i.path.slice(dir.length + 1), i.outcome]));
    expect(outcomes).toEqual({ 'A0001.jpg': 'ok', 'A0017.png': 'ok', 'A0002.tif': 'converted', 'A0003.jpg': 'invalid', 'Q0001.jpg': 'invalid' });
    for (const item of written.items) expect(item.reason, item.path).toEqual(expect.any(String));
    expect(written.items.find((i) => i.path.endsWith('Q0001.jpg'))!.reason).toBe('no member has the code Q0001 (taken from the file name)');

    const hashes = await photoHashes(emu());
    expect(hashes.get('A0001')).toBe(sha256(files['A0001.jpg']!));
  }, 60_000);

  it('without --json: the summary and each problem on stdout; --dry-run changes nothing', async () => {
    const before = await emu().control('GET', '/state');
    const run = await photos(dir, '--dry-run');
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toContain('photos import (dry run): 2 ok, 1 converted, 2 invalid');
    // A0017 got its photo in the first run: now both go to update, in one request.
    expect(run.stdout).toContain('1 update request (0 register, 1 update; the fewest possible: 1)');
    expect(run.stdout).toMatch(/invalid: .*A0003\.jpg \(A0003\): not an image the service accepts/);
    expect(run.stdout).toMatch(/invalid: .*Q0001\.jpg \(Q0001\): no member has the code Q0001/);
    expect(await emu().control('GET', '/state')).toEqual(before);
  }, 60_000);

  it('every file in: exit 0', async () => {
    const good = await writeFiles(tempDir('wds-photos-'), { 'A0005.jpg': files['A0001.jpg']! });
    const run = await photos(good, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).counts.ok).toBe(1);
  }, 60_000);

  it('a source that is not there is a bad argument (exit 2); an empty one is said to hold nothing (exit 0)', async () => {
    const missing = join(tempDir('wds-photos-'), 'not-there');
    const run = await photos(missing);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${missing}: no such file or folder`);
    const empty = tempDir('wds-photos-empty-');
    const none = await photos(empty, '--dry-run');
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain(`${empty} holds no file to import`);
  }, 60_000);
});
