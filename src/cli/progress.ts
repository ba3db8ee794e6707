/**
 * Progress of a file run on stderr: a bar with files, bytes, rate and ETA on a terminal, a plain
 * line every few seconds otherwise (CI logs, pipes).
 */
import cliProgress from 'cli-progress';
import { formatBytes } from '../util/format.js';

export { formatBytes };

export interface ProgressView {
  update(state: { done: number; total: number; bytes: number; note?: string }): void;
  stop(): void;
}


export function createProgress(label: string, options: { quiet?: boolean; json?: boolean } = {}): ProgressView {
  if (options.quiet) return { update: () => undefined, stop: () => undefined };
  const started = Date.now();
  const rate = (bytes: number): string => `${formatBytes(bytes / Math.max(0.001, (Date.now() - started) / 1000))}/s`;
  if (process.stderr.isTTY && !options.json) {
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {value}/{total} files | {bytes} | {rate} | ETA {eta_formatted} {note}`, hideCursor: true, stream: process.stderr, etaBuffer: 50 },
      cliProgress.Presets.shades_classic,
    );
    let started_ = false;
    return {
      update: ({ done, total, bytes, note }) => {
        if (!started_) {
          bar.start(total, done, { bytes: formatBytes(bytes), rate: rate(bytes), note: note ?? '' });
          started_ = true;
        }
        bar.setTotal(total);
        bar.update(done, { bytes: formatBytes(bytes), rate: rate(bytes), note: note ?? '' });
      },
      stop: () => {
        if (started_) bar.stop();
      },
    };
  }
  let last = 0;
  let latest: { done: number; total: number; bytes: number; note?: string } = { done: 0, total: 0, bytes: 0 };
  const print = (): void => {
    const { done, total, bytes, note } = latest;
    const elapsed = (Date.now() - started) / 1000;
    const eta = done > 0 && total > done ? ` ETA ${Math.round((elapsed / done) * (total - done))} s` : '';
    process.stderr.write(`${label}: ${done}/${total} files, ${formatBytes(bytes)}, ${rate(bytes)}${eta}${note ? ` (${note})` : ''}\n`);
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
