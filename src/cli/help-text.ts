/**
 * What `-h` says beyond the options: examples, the exit codes and the environment variables. Each
 * variable and each exit code is described once here; a leaf command names its own with
 * `leafCommand`, which adds them to its `-h`, and `wds-files --help` lists them all.
 */
import type { Argv, CommandModule } from 'yargs';
import { EXIT } from './exit-codes.js';

/** Every environment variable wds-files reads, with what it means. */
export const ENVIRONMENT = {
  WDS_BASE_URL: "the service's address (as --base-url); unset: the embedded emulator",
  WDS_CONSUMER_KEY: "the company's API consumer key (as --consumer-key)",
  WDS_CONSUMER_SECRET: 'its consumer secret (as --consumer-secret; never printed)',
  WDS_CLIENT_LIMITS: "the client's own limit windows: off, or e.g. update=5/1m,request=3000/1h",
  WDS_LEGACY_LIMITS: "the legacy client's own limit windows: off, or e.g. request=60/1h,token=5/1h",
  WDS_TOKEN_CACHE: 'off: issue a token every run rather than reuse the last one still valid',
  WDS_DATABASE_URL: 'PostgreSQL URL (as --database): limit windows shared across machines',
  WDS_WEBHOOK_TOKEN: 'the webhook secret token, for webhook register and serve (never printed)',
  WDS_TIMEZONE: "the service's time zone for schedule's cron times (default Asia/Tokyo)",
  WDS_FLEET_LEASE: "seconds a fleet run's lease lasts without its worker's renewal (default 45)",
  NO_COLOR: 'any value: no colour on stderr (none either when stderr is not a terminal)',
  XDG_STATE_HOME: 'import journals, schedule state, kept tokens (default ~/.local/state)',
  XDG_CACHE_HOME: 'the shared limit windows and the code cache (default ~/.cache)',
  WDS_CODE_CACHE: "the code cache's folder, or off (default $XDG_CACHE_HOME/wds-files/code)",
} as const;

export type EnvName = keyof typeof ENVIRONMENT;

/** What every command reads as it starts and as it prints. */
const EVERY_COMMAND: readonly EnvName[] = ['NO_COLOR', 'WDS_CODE_CACHE'];

/** What a command that talks to the service through API v2 reads (src/cli/connection.ts). */
export const CONNECTION_ENV: readonly EnvName[] = ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET', 'WDS_CLIENT_LIMITS', 'WDS_TOKEN_CACHE', 'WDS_DATABASE_URL', 'XDG_STATE_HOME', 'XDG_CACHE_HOME'];

/** What a legacy command reads: the same connection, with the legacy interface's own windows. */
export const LEGACY_ENV: readonly EnvName[] = CONNECTION_ENV.map((name) => (name === 'WDS_CLIENT_LIMITS' ? 'WDS_LEGACY_LIMITS' : name));

/** The general meaning of each exit code (DESIGN.md section 3). */
const EXIT_MEANINGS: Record<ExitCode, string> = {
  [EXIT.ok]: 'everything succeeded',
  [EXIT.fatal]: 'a fatal error (credentials refused, disk full, another run holds the target)',
  [EXIT.usage]: 'a usage error (a bad option or argument, nothing sent)',
  [EXIT.partial]: 'finished, but some files were invalid, conflicting or failed (see --report)',
  [EXIT.sigint]: 'stopped by Ctrl-C (SIGINT) after ending the work in flight; run it again to continue',
  [EXIT.sigterm]: 'stopped by SIGTERM, likewise',
};

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A leaf command's part of its `-h`. */
export interface LeafHelp {
  /** Command lines as a user types them (`wds-files ...`), each with what it does; one at least. */
  examples: ReadonlyArray<readonly [line: string, meaning: string]>;
  /**
   * The exit codes it ends with: 0, 1 and 2 always; 3, 130 and 143 when named. A text is this
   * command's meaning of the code; `true` keeps the general meaning.
   */
  exits: Partial<Record<ExitCode, string | true>>;
  /** The environment variables it reads beyond NO_COLOR and WDS_CODE_CACHE, which every command reads. */
  env: readonly EnvName[];
}

const exitLines = (exits: LeafHelp['exits']): string[] => {
  const codes = [...new Set<ExitCode>([EXIT.ok, EXIT.fatal, EXIT.usage, ...(Object.keys(exits).map(Number) as ExitCode[])])].sort((a, b) => a - b);
  return codes.map((code) => {
    const own = exits[code];
    return `  ${String(code).padEnd(5)}${typeof own === 'string' ? own : EXIT_MEANINGS[code]}`;
  });
};

const envLines = (names: readonly EnvName[]): string[] => {
  const width = Math.max(...names.map((name) => name.length)) + 2;
  return names.map((name) => `  ${name.padEnd(width)}${ENVIRONMENT[name]}`);
};

/** The exit codes and environment variables of a command, as its help ends with them. */
export function helpEpilogue(help: Pick<LeafHelp, 'exits' | 'env'>): string {
  const env = [...new Set([...help.env, ...EVERY_COMMAND])];
  return ['Exit codes:', ...exitLines(help.exits), '', 'Environment:', ...envLines(env)].join('\n');
}

/**
 * The command with its examples, exit codes and environment variables in its `-h`. Every leaf
 * command is made with this, so a new one cannot leave them out (test/cli/help.test.ts walks the
 * command tree and checks each one's help).
 */
export function leafCommand<U>(command: CommandModule<object, U> & { builder: (y: Argv) => Argv<U> }, help: LeafHelp): CommandModule<object, U> {
  if (!help.examples.length) throw new Error(`${command.command}: a leaf command needs an example`);
  return {
    ...command,
    builder: (y: Argv) => {
      let built = command.builder(y);
      for (const [line, meaning] of help.examples) built = built.example(line, meaning);
      return built.epilogue(helpEpilogue(help));
    },
  };
}

/** The whole program's `--help`: examples of its main commands, every exit code and variable. */
export function withHelpText<T>(yargs: Argv<T>): Argv<T> {
  const allCodes = Object.fromEntries(Object.keys(EXIT_MEANINGS).map((code) => [code, true])) as LeafHelp['exits'];
  const exits = exitLines({ ...allCodes, [EXIT.sigterm]: 'stopped by SIGTERM, likewise (schedule exits 0 once its runs have ended)' });
  return yargs
    .example('$0 emulator', 'a local service with the sample company; prints the --base-url to use')
    .example('$0 photos export -o photos.zip --base-url http://127.0.0.1:8787', 'every face photo into a zip')
    .example('$0 attachments export -o out/attachments', 'every attachment into a folder')
    .example('$0 verify photos.zip', 'every file checked against the manifest')
    .example('$0 photos import photos/ --dry-run', 'check a folder of <code>.jpg and send nothing that changes')
    .example('$0 api GET /members', 'one raw API call with auth and limits')
    .example('$0 legacy sheet 0 --out members.csv', 'the base information of every member through the legacy interface, for Excel')
    .epilogue(['Environment:', ...envLines(Object.keys(ENVIRONMENT) as EnvName[]), '', 'Exit codes:', ...exits, '', 'Each command\'s -h has its own examples, exit codes and environment.'].join('\n'));
}
