/**
 * Progress of a file run on stderr: a bar with files, bytes, rate and ETA on a terminal, a plain
 * line every few seconds otherwise (CI logs, pipes).
 */
import { formatBytes } from '../util/format.js';
import { paint } from './color.js';
import { drawLive, endLive, fitLive } from './live-line.js';
import { duration } from './import-progress.js';

export { formatBytes };

export interface ProgressState {
  /** Files finished, failed ones included. */
  done: number;
  total: number;
  bytes: number;
  failed?: number;
  retries?: number;
  note?: string;
}

export interface ProgressView {
  update(state: ProgressState): void;
  stop(): void;
}

/** "1 failed, 4 retries": files that finished without being written, and downloads tried again. */
function troubles(state: ProgressState): string {
  const parts = [];
  if (state.failed) parts.push(paint('red', `${state.failed} failed`));
  if (state.retries) parts.push(paint('yellow', `${state.retries} ${state.retries === 1 ? 'retry' : 'retries'}`));
  return parts.join(', ');
}


export function createProgress(label: string, options: { quiet?: boolean; json?: boolean } = {}): ProgressView {
  if (options.quiet) return { update: () => undefined, stop: () => undefined };
  const started = Date.now();
  const rate = (bytes: number): string => `${formatBytes(bytes / Math.max(0.001, (Date.now() - started) / 1000))}/s`;
  if (process.stderr.isTTY && !options.json) {
    let latest: ProgressState | undefined;
    let stopped = false;
    let lastDraw = 0;
    const draw = (): void => {
      if (!latest || stopped) return;
      const { done, total, bytes, note } = latest;
      const cells = 40;
      const full = total > 0 ? Math.min(cells, Math.round((done / total) * cells)) : 0;
      const t = troubles(latest);
      const elapsed = (Date.now() - started) / 1000;
      const eta = done > 0 && total > done ? `ETA ${duration((elapsed / done) * (total - done) * 1000)}` : total > 0 && done >= total ? 'ETA 0 s' : 'ETA -';
      drawLive(fitLive(`${label} [${'█'.repeat(full)}${'░'.repeat(cells - full)}] ${done}/${total} files${t ? ` (${t})` : ''} | ${formatBytes(bytes)} | ${rate(bytes)} | ${eta}${note ? ` ${note}` : ''}`));
      lastDraw = Date.now();
    };
    // The rate and the ETA move between updates too.
    const timer = setInterval(draw, 250);
    timer.unref();
    return {
      update: (state) => {
        latest = state;
        // Thousands of small files a second would be as many redraws: at most ten a second.
        if (Date.now() - lastDraw >= 100) draw();
      },
      stop: () => {
        if (stopped) return;
        clearInterval(timer);
        draw();
        stopped = true;
        endLive();
      },
    };
  }
  let last = 0;
  let latest: ProgressState = { done: 0, total: 0, bytes: 0 };
  const print = (): void => {
    const { done, total, bytes, note } = latest;
    const t = troubles(latest);
    const elapsed = (Date.now() - started) / 1000;
    const eta = done > 0 && total > done ? ` ETA ${Math.round((elapsed / done) * (total - done))} s` : '';
    process.stderr.write(`${label}: ${done}/${total} files${t ? ` (${t})` : ''}, ${formatBytes(bytes)}, ${rate(bytes)}${eta}${note ? ` (${note})` : ''}\n`);
  };
  return {
    update: (state) => {
      latest = state;
      if (Date.now() - last >= 5000) {
        last = Date.now();
        print();
      }
    },
    stop: () => print(),
  };
}
