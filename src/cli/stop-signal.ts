/**
 * How every command stops on SIGINT or SIGTERM (DESIGN.md section 8): the first signal aborts
 * `stopSignal()`, whose reason is the signal's name; the pipelines then start nothing new, let the
 * work in flight end, and return with `report.interrupted` set, so the command still writes its
 * report. A second signal means the user will not wait: the process exits at once with the
 * signal's code, as rclone and restic do on a second Ctrl-C.
 */
import { EXIT } from './exit-codes.js';
import { interruptedBy } from '../stages/report.js';
import { clearLive, liveShown, writeAbove } from './live-line.js';

export type StopSignalName = 'SIGINT' | 'SIGTERM';

let controller: AbortController | null = null;

/** The process's stop signal, listening from the first call on. */
export function stopSignal(): AbortSignal {
  if (controller) return controller.signal;
  const made = new AbortController();
  controller = made;
  const on = (name: StopSignalName) => (): void => {
    // A progress line is cleared with the terminal's "^C" on it; without one, the "^C" keeps a line of its own.
    const lead = liveShown() ? '' : '\n';
    if (made.signal.aborted) {
      clearLive();
      process.stderr.write(`${lead}wds-files: ${name} again: stopping now, without waiting for the work in flight\n`);
      process.exit(exitCodeOf(name));
    }
    writeAbove(`${lead}wds-files: ${name}: finishing the work in flight, then stopping (${name === 'SIGINT' ? 'Ctrl-C' : 'the signal'} again stops at once)\n`);
    made.abort(name);
  };
  process.on('SIGINT', on('SIGINT'));
  process.on('SIGTERM', on('SIGTERM'));
  return made.signal;
}

/** Which signal stopped the run, if one did. */
export function stoppedBy(signal: AbortSignal | undefined): StopSignalName | null {
  return signal?.aborted ? interruptedBy(signal) : null;
}

/** 128 + the signal's number, as a shell reports a process ended by it. */
export const exitCodeOf = (name: StopSignalName): number => (name === 'SIGTERM' ? EXIT.sigterm : EXIT.sigint);
