/**
 * The CLI on a real terminal: a tmux pane on a tmux server of the test's own (no other session is
 * touched), what the pane shows, its cursor, and keys typed into it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_MAIN, ROOT } from './cli-process.js';

export const hasTmux = spawnSync('tmux', ['-V']).status === 0;

export interface Terminal {
  /** Runs the CLI in a new 160-column pane; the pane stays after it ends, saying `EXIT=<code>`. */
  run(args: string[], env: Record<string, string>): string;
  /** What the pane shows; with `escapes`, its colour codes too. */
  capture(pane: string, escapes?: boolean): string;
  /** Types keys into the pane, as tmux names them (`C-c`). */
  keys(pane: string, ...keys: string[]): void;
  /** Whether the pane shows its cursor (a program that hid it and never showed it again leaves it hidden). */
  cursorShown(pane: string): boolean;
  close(): void;
}

const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

export function tmuxTerminal(): Terminal {
  const socket = `wds-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const tmux = (...args: string[]): string => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  let panes = 0;
  return {
    run(args, env) {
      const name = `s${++panes}`;
      const vars = Object.entries({ XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-cli-')), XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-state-')), ...env })
        .map(([k, v]) => `${k}=${quote(v)}`).join(' ');
      // The shell takes the pane's Ctrl-C too: a trap keeps it alive to say how the CLI ended.
      const command = `trap : INT; cd ${quote(ROOT)} && env -u NO_COLOR ${vars} ${quote(process.execPath)} ${quote(CLI_MAIN)} ${args.map(quote).join(' ')}; echo "EXIT=$?"; sleep 120`;
      tmux('new-session', '-d', '-s', name, '-x', '160', '-y', '30', command);
      return name;
    },
    capture: (pane, escapes = false) => tmux('capture-pane', '-p', ...(escapes ? ['-e'] : []), '-t', pane),
    keys: (pane, ...keys) => void tmux('send-keys', '-t', pane, ...keys),
    cursorShown: (pane) => tmux('display-message', '-p', '-t', pane, '#{cursor_flag}').trim() === '1',
    close: () => void spawnSync('tmux', ['-L', socket, 'kill-server']),
  };
}

/** Polls `probe` every 250 ms until it answers something, or fails after `ms`. */
export async function until<T>(what: string, probe: () => T | undefined, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
