/**
 * Progress of a file run on stderr: a bar with files, bytes, rate and ETA on a terminal, a plain
 * line every few seconds otherwise (CI logs, pipes).
 */
import cliProgress from 'cli-progress';
import { formatBytes } from '../util/format.js';
import { paint } from './color.js';

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
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {value}/{total} files{troubles} | {bytes} | {rate} | ETA {eta_formatted} {note}`, hideCursor: true, stream: process.stderr, etaBuffer: 50 },
      cliProgress.Presets.shades_classic,
    );
    let started_ = false;
    return {
      update: (state) => {
        const { done, total, bytes, note } = state;
        const t = troubles(state);
        const payload = { bytes: formatBytes(bytes), rate: rate(bytes), note: note ?? '', troubles: t ? ` (${t})` : '' };
        if (!started_) {
          bar.start(total, done, payload);
          started_ = true;
        }
        bar.setTotal(total);
        bar.update(done, payload);
      },
      stop: () => {
        if (started_) bar.stop();
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
