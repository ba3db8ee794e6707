/**
 * The values of the command line that are secrets: the consumer secret (`--consumer-secret X`,
 * `--consumer-secret=X`, yargs' `--consumerSecret` spelling, and the word after
 * `--no-consumer-secret`, which yargs leaves as a stray argument) and the user part of a base URL.
 * They are registered before yargs reads the line, so that no usage error, yargs' own included,
 * can print one: every line the CLI prints is redacted (log.ts).
 */
import { REDACTED, redact, registerSecret } from '../util/redact.js';

const SECRET_OPTION = /^--(?:no-)?consumer[-_]?secret$/i;
const SECRET_OPTION_WITH_VALUE = /^(--(?:no-)?consumer[-_]?secret)=/i;
const URL_OPTION = /^--base[-_]?url$/i;
const URL_OPTION_WITH_VALUE = /^--base[-_]?url=/i;

/**
 * The user part of a base URL that does not parse (`http://u:pa/ss@host`): everything up to its
 * last `@`. A URL that parses needs none, as redact masks `scheme://user:password@` by its shape.
 */
function userPart(url: string): string | undefined {
  if (URL.canParse(url) && new URL(url).host) return undefined;
  return /^(?:[a-z][a-z0-9+.-]*:)?(?:\/\/)?([^]*)@/i.exec(url)?.[1];
}

/** Registers each secret of the command line and of WDS_CONSUMER_SECRET, WDS_WEBHOOK_TOKEN and WDS_BASE_URL. */
export function registerCommandLineSecrets(argv: string[], env: NodeJS.ProcessEnv = process.env): void {
  registerSecret(env.WDS_CONSUMER_SECRET);
  registerSecret(env.WDS_WEBHOOK_TOKEN);
  if (env.WDS_BASE_URL) registerSecret(userPart(env.WDS_BASE_URL));
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (SECRET_OPTION.test(arg)) registerSecret(argv[i + 1]);
    else if (SECRET_OPTION_WITH_VALUE.test(arg)) registerSecret(arg.slice(arg.indexOf('=') + 1));
    else if (URL_OPTION.test(arg) && argv[i + 1]) registerSecret(userPart(argv[i + 1]!));
    else if (URL_OPTION_WITH_VALUE.test(arg)) registerSecret(userPart(arg.slice(arg.indexOf('=') + 1)));
  }
}

/** The command line as it may be shown (a lock's holder, say): the consumer secret masked even when shorter than a registered secret. */
export function shownCommandLine(argv: string[]): string {
  const shown: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    const withValue = SECRET_OPTION_WITH_VALUE.exec(arg);
    if (SECRET_OPTION.test(arg) && i + 1 < argv.length) {
      shown.push(arg, REDACTED);
      i += 1;
    } else if (withValue) shown.push(`${withValue[1]}=${REDACTED}`);
    else shown.push(/\s/.test(arg) ? JSON.stringify(arg) : arg);
  }
  return redact(['wds-files', ...shown].join(' '));
}

/**
 * A consumer secret given as a flag shows in the process list (`ps`, /proc/PID/cmdline) to every
 * user of the machine for the whole run. Where Node's process title overwrites the command line the
 * kernel shows (Linux: within the length of the original line), it is set to the line with the
 * secret masked; before that, while Node starts, the secret is there to see, hence the warning
 * (`quiet` keeps it off stderr). Answers whether a secret was given as a flag.
 */
export function hideSecretFlag(argv: string[], quiet: boolean): boolean {
  if (!argv.some((arg) => SECRET_OPTION.test(arg) || SECRET_OPTION_WITH_VALUE.test(arg))) return false;
  const shown = shownCommandLine(argv).replace(/^wds-files /, '');
  try {
    process.title = [process.argv0, process.argv[1], shown].filter(Boolean).join(' ');
  } catch {
    // A platform without a settable title (or one that refuses it) keeps its command line.
  }
  if (!quiet) {
    process.stderr.write('wds-files: warning: --consumer-secret on the command line can be read by other users of this machine (ps) while the command starts, and stays in the shell\'s history; use --consumer-secret-file FILE or WDS_CONSUMER_SECRET instead\n');
  }
  return true;
}

/**
 * The refusal of `--consumer-secret` followed by nothing or by a word that starts with "-", or
 * undefined. yargs would take that word for an option and quote it in its error, and it may be
 * the secret itself; so the word is not named.
 */
export function secretValueMissing(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length && argv[i] !== '--'; i += 1) {
    if (!/^--consumer[-_]?secret$/i.test(argv[i]!)) continue;
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('-')) {
      return `${argv[i]} needs a value, and the word after it ${next === undefined ? 'is missing' : 'starts with "-"'}. A secret that starts with "-" is written ${argv[i]}=VALUE; better still, use --consumer-secret-file FILE or set WDS_CONSUMER_SECRET, which keep it out of the process list.`;
    }
  }
  return undefined;
}
