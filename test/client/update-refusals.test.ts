/**
 * A 429 answer to an update request is a refusal: nothing was done, so the client waits as
 * Retry-After says and sends the request again, streamed body and all. Run as a real `photos
 * import` with the client's own window switched off (WDS_CLIENT_LIMITS=off), so that the
 * service's limit is met; its body is several MB, still being sent when the refusal comes.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import { noisyJpeg, padJpeg, photoHashes, resetStats, sha256, stats, writeFiles } from '../import/photo-helpers.js';

// One update request a minute, and a minute of service time is 6 real seconds.
const emu = useEmulator({ clockSpeed: 10, maintenance: false, seed: 'samples/company', limits: { updatesPerMinute: 1 } });

describe('an update refused with 429, the client\'s window off', () => {
  it('waits, sends it again, and the import ends ok', async () => {
    const state = (await emu().control('GET', '/state')) as EmulatorState;
    const without = state.members.filter((m) => m.photo === null).map((m) => m.code).sort();
    const withPhoto = state.members.filter((m) => m.photo !== null).map((m) => m.code).sort();
    // A register request, then an update request of about 21 MB of JSON, refused by the minute's limit.
    const files: Record<string, Buffer> = { [`${without[0]}.jpg`]: await noisyJpeg(48, 48, 1) };
    for (const [i, code] of withPhoto.slice(0, 4).entries()) files[`${code}.jpg`] = padJpeg(await noisyJpeg(64, 64, 10 + i), 4_000_000);
    const dir = await writeFiles(tempDir('wds-refusal-'), files);
    await resetStats(emu());

    const run = await runCli(['photos', 'import', dir, '--json', '--no-trim', '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET], {
      WDS_CLIENT_LIMITS: 'off',
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/rate limited \(429\); waiting/);
    const summary = JSON.parse(run.stdout.trim()) as { counts: { ok: number; failed: number }; waited_ms: number };
    expect(summary.counts).toMatchObject({ ok: 5, failed: 0 });
    expect(summary.waited_ms).toBeGreaterThan(0);
    const s = await stats(emu());
    expect(s.rate_limited).toBeGreaterThanOrEqual(1);
    expect(s.update_requests).toBe(2);
    const hashes = await photoHashes(emu());
    for (const [name, data] of Object.entries(files)) expect(hashes.get(name.replace('.jpg', ''))).toBe(sha256(data));
  }, 90_000);

  it('refuses a WDS_CLIENT_LIMITS it cannot read, naming the variable and the rule (exit 2)', async () => {
    const run = await runCli(['photos', 'import', tempDir('wds-refusal-'), '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET], {
      WDS_CLIENT_LIMITS: 'update=5 a minute',
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('WDS_CLIENT_LIMITS must be "off" or a list such as update=5/1m');
    expect(run.stderr).toContain('got "update=5 a minute"');
  }, 60_000);
});
