/**
 * Where the CLI's lines go: stderr for people (request lines only with -v, nothing but errors
 * with -q), and with `--log-file FILE` every line, debug included, as pino JSON lines. Every
 * line is redacted before it is written anywhere.
 */
import { createRequire } from 'node:module';
import type pino from 'pino';
import type { Logger } from '../client/options.js';
import { redact } from '../util/redact.js';
import { paint } from './color.js';
import { writeAbove } from './live-line.js';

export interface LogSettings {
  /** 0 by default; 1 with -v (request lines); 2 with -vv (each line with its time). */
  verbose: number;
  quiet: boolean;
  logFile?: string;
}

let settings: LogSettings = { verbose: 0, quiet: false };
let file: pino.Logger | undefined;

/** Set once, from the global options, before a command runs. */
export function configureLog(next: LogSettings): void {
  settings = next;
  if (next.logFile) {
    // Required only here, since most runs have no log file; pino is CommonJS, so this stays synchronous.
    const pino = createRequire(import.meta.url)('pino') as typeof import('pino').default;
    // Synchronous, so that a line written just before process.exit is in the file.
    file = pino({ level: 'debug', base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: next.logFile, sync: true, mkdir: true }));
  }
}

export function verbosity(): number {
  return settings.verbose;
}

function toStderr(level: 'debug' | 'info' | 'warn' | 'error', line: string): void {
  const stamp = settings.verbose >= 2 ? `${new Date().toISOString()} ` : '';
  const coloured = level === 'debug' ? paint('dim', line) : level === 'warn' ? paint('yellow', line) : level === 'error' ? paint('red', line) : line;
  // Above a progress line, if one is shown, rather than at its end.
  writeAbove(`${stamp}${coloured}\n`);
}

/** A line for the person running the command: on stderr unless quiet, and in the log file. */
export function say(line: string, quiet = settings.quiet): void {
  const text = redact(line);
  file?.info(text);
  if (!quiet) toStderr('info', text);
}

/** A fatal or usage error: always on stderr, and in the log file. */
export function sayError(line: string): void {
  const text = redact(line);
  file?.error(text);
  toStderr('error', text);
}

/**
 * The client's logger. Its waits and retries are already said through onWait, so on stderr only
 * the request lines (debug, with -v) and warnings appear; the log file gets everything.
 */
export const clientLogger: Logger = {
  debug: (message) => {
    // Called for every download of an export: nothing is done when nobody reads debug lines.
    if (!file && settings.verbose < 1) return;
    const text = redact(message);
    file?.debug(text);
    if (settings.verbose >= 1) toStderr('debug', text);
  },
  info: (message) => {
    file?.info(redact(message));
  },
  warn: (message) => {
    const text = redact(message);
    file?.warn(text);
    if (!settings.quiet) toStderr('warn', text);
  },
};
