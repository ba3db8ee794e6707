/**
 * The CLI on a real terminal (a tmux pane): during a limit wait the import's progress line shows
 * the stage, a countdown that goes down, and an ETA; colour shows on the terminal and goes
 * under NO_COLOR. The client's update window is made 1 request in 12 s (WDS_CLIENT_LIMITS), so
 * the second of an import's two requests waits about 12 s.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET, type TestEmulator } from '../helpers/emulator.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import { hasTmux, tmuxTerminal, until } from '../helpers/tmux.js';
import { noisyJpeg, writeFiles } from '../import/photo-helpers.js';

if (!hasTmux) console.log('import-progress-tty.test: skipped, tmux is not installed (apt-get install tmux; .ci/run installs it)');

const terminal = tmuxTerminal();
const runInPane = (args: string[], env: Record<string, string>): string => terminal.run(args, env);
const capture = (name: string, escapes = false): string => terminal.capture(name, escapes);

describe.skipIf(!hasTmux)('import progress on a terminal', () => {
  const emu = useEmulator({ seed: 'samples/company', maintenance: false });
  afterAll(() => {
    if (hasTmux) terminal.close();
  });

  async function twoRequestFolder(server: TestEmulator): Promise<string> {
    const state = (await server.control('GET', '/state')) as EmulatorState;
    const withPhoto = state.members.find((m) => m.photo !== null)!.code;
    const without = state.members.find((m) => m.photo === null)!.code;
    return writeFiles(tempDir('wds-tty-'), { [`${withPhoto}.jpg`]: await noisyJpeg(40, 40, 7), [`${without}.jpg`]: await noisyJpeg(40, 40, 8) });
  }

  it('shows the stage, a live countdown of the limit wait and an ETA, then the summary', async () => {
    const dir = await twoRequestFolder(emu());
    const pane = runInPane(['photos', 'import', dir, '--no-trim', '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET], { WDS_CLIENT_LIMITS: 'update=1/12s' });
    const line = /photos import sending \[[█░]+\] 1\/2 files \| .* \| 1 of at least 2 requests \| waiting (\d+) s for the 1-in-12 s window \| ETA (\d+) s/;
    const first = await until('the countdown', () => line.exec(capture(pane)) ?? undefined, 30_000);
    const waitA = Number(first[1]);
    const etaA = Number(first[2]);
    expect(waitA).toBeGreaterThan(0);
    // Nothing is left after the waiting request: the ETA is the wait.
    expect(etaA).toBe(waitA);
    // A few seconds later the same line counts down.
    await new Promise((r) => setTimeout(r, 2500));
    const second = await until('a lower countdown', () => {
      const match = line.exec(capture(pane));
      return match && Number(match[1]) < waitA ? match : undefined;
    }, 5_000);
    expect(Number(second[2])).toBeLessThan(etaA);
    // Colour on a terminal: the stage is painted.
    expect(capture(pane, true)).toContain('\u001b[');

    const end = await until('the end', () => (/EXIT=(\d+)/.test(capture(pane)) ? capture(pane) : undefined), 30_000);
    expect(end).toContain('EXIT=0');
    expect(end).toMatch(/photos import: 2 ok/);
    expect(end).toMatch(/2 of at least 2 requests/);
  }, 60_000);

  it('paints errors on a terminal, and not under NO_COLOR', async () => {
    const coloured = runInPane(['phots'], {});
    const plain = runInPane(['phots'], { NO_COLOR: '1' });
    const shown = await until('both errors', () => {
      const a = capture(coloured, true);
      const b = capture(plain, true);
      return a.includes('EXIT=2') && b.includes('EXIT=2') ? { a, b } : undefined;
    }, 20_000);
    expect(shown.a).toContain('Unknown command "phots"');
    expect(shown.a).toContain('\u001b[31m');
    expect(shown.b).toContain('Unknown command "phots"');
    for (const code of [31, 32, 33, 36]) expect(shown.b).not.toContain(`\u001b[${code}m`);
  }, 30_000);
});
