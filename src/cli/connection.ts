/**
 * Connection settings of every command (DESIGN.md section 3): `--base-url`, `--consumer-key`,
 * `--consumer-secret`, or WDS_BASE_URL, WDS_CONSUMER_KEY, WDS_CONSUMER_SECRET. Without a base URL
 * a command runs against the embedded emulator with the sample company, the project's default.
 */
import type { Argv } from 'yargs';
import type { WdsClient } from '../client/client.js';
import type { WaitEvent } from '../client/limiter.js';
import { parseLimitsSetting, type LimitsSetting } from '../client/limits-setting.js';
import type { RunningEmulator } from '../emulator/index.js';
import { SAMPLE_COMPANY_DIR } from './paths.js';
import { clientLogger, say as sayLine } from './log.js';

export interface ConnectionArgs {
  'base-url'?: string;
  'consumer-key'?: string;
  'consumer-secret'?: string;
  'dry-run'?: boolean;
  json?: boolean;
  quiet?: boolean;
}

export function withConnection<T>(yargs: Argv<T>): Argv<T & ConnectionArgs> {
  return yargs
    .option('base-url', { type: 'string', describe: 'Service base URL (env WDS_BASE_URL); default: the embedded emulator' })
    .option('consumer-key', { type: 'string', describe: 'Consumer key (env WDS_CONSUMER_KEY)' })
    .option('consumer-secret', { type: 'string', describe: 'Consumer secret (env WDS_CONSUMER_SECRET; prefer the variable)' })
    .option('json', { type: 'boolean', default: false, describe: 'One JSON summary on stdout; logs on stderr' }) as Argv<T & ConnectionArgs>;
}

export interface Connection {
  client: WdsClient;
  /** Set when the command runs against the embedded emulator. */
  embedded?: RunningEmulator;
  close: () => Promise<void>;
}

/** A stderr line, redacted. */
export function say(args: { quiet?: boolean }, line: string): void {
  sayLine(line, args.quiet);
}

export interface ConnectOptions {
  onWait?: (e: WaitEvent) => void;
  /** Wait events go to onWait alone (a progress view shows them), not also as lines. */
  quietWaits?: boolean;
  /**
   * The command writes to the service: without a base URL it refuses, since the embedded
   * emulator forgets everything when the command ends, unless the user asked for it.
   */
  writes?: { allowEmbedded: boolean };
}

/** Where a command connects: the service's address and the company's credentials. */
export interface Endpoint {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  /** Set when no base URL was given and the embedded emulator was started for this command. */
  embedded?: RunningEmulator;
}

/**
 * The base URL and credentials from the flags or the environment; without a base URL, the
 * embedded emulator with the sample company (it serves the legacy interface too). A missing key
 * or secret is a usage error naming the flag and the variable.
 */
export async function resolveEndpoint(args: ConnectionArgs): Promise<Endpoint> {
  let baseUrl = args['base-url'] ?? process.env.WDS_BASE_URL;
  let consumerKey = args['consumer-key'] ?? process.env.WDS_CONSUMER_KEY;
  let consumerSecret = args['consumer-secret'] ?? process.env.WDS_CONSUMER_SECRET;
  let embedded: RunningEmulator | undefined;
  if (!baseUrl) {
    // The emulator (and sharp, which it uses for trimming) is loaded only when it is needed.
    const { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET } = await import('../emulator/index.js');
    embedded = await startEmulator({ port: 0, seed: SAMPLE_COMPANY_DIR, maintenance: false });
    baseUrl = embedded.url;
    consumerKey = DEFAULT_CONSUMER_KEY;
    consumerSecret = DEFAULT_CONSUMER_SECRET;
    say(args, `No --base-url or WDS_BASE_URL: using the embedded emulator with the sample company at ${baseUrl}`);
  }
  const missing = [!consumerKey && '--consumer-key (or WDS_CONSUMER_KEY)', !consumerSecret && '--consumer-secret (or WDS_CONSUMER_SECRET)'].filter(Boolean);
  if (missing.length) throw new UsageError(`connecting to ${baseUrl} needs ${missing.join(' and ')}`);
  return { baseUrl, consumerKey: consumerKey!, consumerSecret: consumerSecret!, embedded };
}

export async function connect(args: ConnectionArgs, extra: ConnectOptions = {}): Promise<Connection> {
  if (!(args['base-url'] ?? process.env.WDS_BASE_URL) && extra.writes && !extra.writes.allowEmbedded) throw new UsageError(EMBEDDED_WRITE_REFUSAL);
  const { baseUrl, consumerKey, consumerSecret, embedded } = await resolveEndpoint(args);
  // The client (undici and the wire schemas) is loaded by the commands that talk to the service, not at start.
  const { WdsClient } = await import('../client/client.js');
  const client = new WdsClient({
    baseUrl,
    consumerKey,
    consumerSecret,
    dryRun: args['dry-run'] ?? false,
    ...clientLimits(),
    // The embedded emulator is a fresh company each run: its windows are not shared with others.
    ...(embedded ? { stateFile: false as const } : {}),
    logger: clientLogger,
    onWait: (event) => {
      extra.onWait?.(event);
      if (!extra.quietWaits) say(args, event.message);
    },
  });
  return {
    client,
    embedded,
    close: async () => {
      await client.close();
      await embedded?.close();
    },
  };
}

const EMBEDDED_WRITE_REFUSAL = [
  'no --base-url or WDS_BASE_URL: an import would go to the embedded emulator, which forgets everything when this command ends.',
  'Point it at the service with --base-url https://... (or WDS_BASE_URL) and the consumer key and secret,',
  'or at a running emulator: start `wds-files emulator` in another terminal and pass the --base-url it prints.',
  'To try the import against the embedded emulator all the same, add --emulator.',
].join('\n  ');

/** WDS_CLIENT_LIMITS: the client's own limit windows, or `off` (see src/client/limits-setting.ts). */
function clientLimits(): { limits?: LimitsSetting } {
  const text = process.env.WDS_CLIENT_LIMITS;
  if (!text) return {};
  try {
    return { limits: parseLimitsSetting(text) };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** A mistake in how the command was called: exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
