/**
 * Ctrl-C on a real terminal (a tmux pane) while a progress line is shown: the notice, the last
 * progress line and the summary each keep a line of their own, nothing redraws the progress line
 * over or after the summary, and the cursor is shown at the end. The export is slowed by the emulator's storage latency, the import by a
 * client update window of 1 request a minute, so that the keys land mid-run.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import { hasTmux, tmuxTerminal, until } from '../helpers/tmux.js';
import { noisyJpeg, writeFiles } from '../import/photo-helpers.js';
import { join } from 'node:path';

if (!hasTmux) console.log('interrupt-tty.test: skipped, tmux is not installed (apt-get install tmux; .ci/run installs it)');

const NOTICE = 'wds-files: SIGINT: finishing the work in flight, then stopping (Ctrl-C again stops at once)';

/** The pane's lines, without the empty ones below the last. */
const lines = (screen: string): string[] => screen.replace(/\s+$/, '').split('\n');

describe.skipIf(!hasTmux)('Ctrl-C on a terminal', () => {
  const emu = useEmulator({ seed: 'samples/company', maintenance: false });
  const terminal = tmuxTerminal();
  afterAll(async () => {
    terminal.close();
    await emu().control('POST', '/faults', { storage: { latency_ms: 0 } });
  });
  const connection = (): string[] => ['--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET];

  it('mid-export leaves the notice and the summary whole, no progress line after them, the cursor shown', async () => {
    // The sample company's 26 photos, two at a time, each answered after 2 s.
    await emu().control('POST', '/faults', { storage: { latency_ms: 2000 } });
    const pane = terminal.run(['photos', 'export', '-o', join(tempDir(), 'out'), '--concurrency', '2', ...connection()], {});
    // Mid-run: some files in, most not.
    await until('the progress line', () => (/photos export \[[█░]+\] [1-9]\d*\/26 files/.test(terminal.capture(pane)) ? true : undefined), 90_000);
    terminal.keys(pane, 'C-c');
    const screen = lines(await until('the end', () => {
      const shown = terminal.capture(pane);
      return /^EXIT=\d+$/m.test(shown) ? shown : undefined;
    }, 60_000));

    const notice = screen.indexOf(NOTICE);
    expect(notice, screen.join('\n')).toBeGreaterThanOrEqual(0);
    const summary = screen.findIndex((line) => line.startsWith('photos export: '));
    expect(screen[summary], screen.join('\n')).toMatch(/^photos export: (\d+) ok, (\d+) skipped \(\2 not reached\); \S+ \w?B in \d+\.\d s$/);
    expect(summary).toBeGreaterThan(notice);
    // Between the notice and the summary, the progress line once, as it stood when the run stopped.
    expect(screen.slice(notice + 1, summary)).toEqual([expect.stringMatching(/^photos export \[[█░]+\] \d+\/26 files \| /)]);
    // After the summary: its lines, the interruption, the exit code; no progress line drawn again.
    expect(screen.slice(summary + 1)).toEqual([
      expect.stringMatching(/^ {2}written to \S+out$/),
      expect.stringMatching(/^interrupted: (\d+) of 26 done; run it again to continue \(stopped by SIGINT\)$/),
      'EXIT=130',
    ]);
    expect(terminal.cursorShown(pane)).toBe(true);
  }, 180_000);

  it('during an import\'s limit wait leaves the summary whole, with no progress line after it', async () => {
    await emu().control('POST', '/faults', { storage: { latency_ms: 0 } });
    const state = (await emu().control('GET', '/state')) as EmulatorState;
    // One member with a photo and one without: two update requests (an update and a registration), the second held by the window.
    const withPhoto = state.members.find((m) => m.photo !== null)!.code;
    const without = state.members.find((m) => m.photo === null)!.code;
    const dir = await writeFiles(tempDir('wds-tty-'), { [`${withPhoto}.jpg`]: await noisyJpeg(40, 40, 11), [`${without}.jpg`]: await noisyJpeg(40, 40, 12) });
    const pane = terminal.run(['photos', 'import', dir, '--no-trim', ...connection()], { WDS_CLIENT_LIMITS: 'update=1/1m' });
    await until('the limit wait', () => (/photos import sending .* waiting \d+ s for the 1-a-minute window/.test(terminal.capture(pane)) ? true : undefined), 90_000)
      .catch((error: Error) => {
        throw new Error(`${error.message}; the pane shows:\n${terminal.capture(pane)}`);
      });
    terminal.keys(pane, 'C-c');
    const screen = lines(await until('the end', () => {
      const shown = terminal.capture(pane);
      return /^EXIT=\d+$/m.test(shown) ? shown : undefined;
    }, 60_000));
    const notice = screen.indexOf(NOTICE);
    const summary = screen.findIndex((line) => line.startsWith('photos import: '));
    expect(notice, screen.join('\n')).toBeGreaterThanOrEqual(0);
    expect(summary).toBeGreaterThan(notice);
    expect(screen[summary]).toMatch(/^photos import: \d+ ok, .* in \d+\.\d s$/);
    expect(screen.slice(notice + 1, summary)).toEqual([expect.stringMatching(/^photos import sending /)]);
    expect(screen.slice(summary + 1).some((line) => line.startsWith('photos import sending'))).toBe(false);
    expect(screen.at(-1)).toBe('EXIT=130');
    expect(screen.at(-2)).toMatch(/^interrupted: .*run it again to continue \(stopped by SIGINT\)$/);
    expect(terminal.cursorShown(pane)).toBe(true);
  }, 180_000);
});
