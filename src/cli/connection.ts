/**
 * Connection settings of every command (DESIGN.md section 3): `--base-url`, `--consumer-key`,
 * `--consumer-secret`, or WDS_BASE_URL, WDS_CONSUMER_KEY, WDS_CONSUMER_SECRET. Without a base URL
 * a command runs against the embedded emulator with the sample company, the project's default.
 */
import type { Argv } from 'yargs';
import type { WaitEvent } from '../client/limiter.js';
import type { Endpoint, PipelineConnection } from '../pipeline-files/connection.js';
import type { JournalStores } from '../stages/import/journal/store.js';
import { EMBEDDED_EMULATOR } from './embedded.js';
import { clientLogger, say as sayLine } from './log.js';
import { UsageError } from './usage-error.js';
import { DATABASE_OPTION } from './database.js';

export { UsageError } from './usage-error.js';

export interface ConnectionArgs {
  'base-url'?: string;
  'consumer-key'?: string;
  'consumer-secret'?: string;
  'consumer-secret-file'?: string;
  'dry-run'?: boolean;
  database?: string;
  json?: boolean;
  quiet?: boolean;
}

export function withConnection<T>(yargs: Argv<T>): Argv<T & ConnectionArgs> {
  return yargs
    .option('base-url', { type: 'string', describe: 'Service base URL (env WDS_BASE_URL); default: the embedded emulator' })
    .option('consumer-key', { type: 'string', describe: 'Consumer key (env WDS_CONSUMER_KEY)' })
    .option('consumer-secret', { type: 'string', describe: 'Consumer secret (env WDS_CONSUMER_SECRET); a flag shows in ps: prefer --consumer-secret-file or the variable' })
    .option('consumer-secret-file', { type: 'string', describe: 'Read the consumer secret from FILE (its first line), e.g. /run/secrets/wds' })
    .option('database', { type: 'string', describe: DATABASE_OPTION })
    .option('json', { type: 'boolean', default: false, describe: 'One JSON summary on stdout; logs on stderr' }) as Argv<T & ConnectionArgs>;
}

/**
 * A command's client, and the embedded emulator when it runs against that; close() closes both.
 * `journals` is the database's when the command was given one.
 */
export type Connection = PipelineConnection & { journals?: JournalStores };

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
export type { Endpoint } from '../pipeline-files/connection.js';

/**
 * The base URL and credentials from the flags or the environment; without a base URL, the
 * embedded emulator with the sample company (it serves the legacy interface too). A missing key
 * or secret is a usage error naming the flag and the variable.
 */
export async function resolveEndpoint(args: ConnectionArgs): Promise<Endpoint> {
  // Loaded when a command connects, not at start (it brings the client, undici and the wire schemas).
  const { endpointOf } = await import('../pipeline-files/connection.js');
  return endpointOf({
    baseUrl: args['base-url'],
    consumerKey: args['consumer-key'],
    consumerSecret: args['consumer-secret'],
    consumerSecretFile: args['consumer-secret-file'],
    names: { baseUrl: '--base-url', consumerKey: '--consumer-key', consumerSecret: '--consumer-secret', consumerSecretFile: '--consumer-secret-file' },
    embedded: EMBEDDED_EMULATOR,
    onEmbedded: (url) => say(args, `No --base-url or WDS_BASE_URL: using the embedded emulator with the sample company at ${url}`),
    fail: (message) => new UsageError(message),
  });
}

export async function connect(args: ConnectionArgs, extra: ConnectOptions = {}): Promise<Connection> {
  if (!(args['base-url'] ?? process.env.WDS_BASE_URL) && extra.writes && !extra.writes.allowEmbedded) throw new UsageError(EMBEDDED_WRITE_REFUSAL);
  const endpoint = await resolveEndpoint(args);
  const [{ clientFor }, { openSharedDatabase }] = await Promise.all([import('../pipeline-files/connection.js'), import('./database.js')]);
  // The embedded emulator is a fresh company: nothing of it is shared.
  const shared = endpoint.embedded ? undefined : await openSharedDatabase(args);
  const connection = await clientFor(endpoint, {
    dryRun: args['dry-run'] ?? false,
    logger: clientLogger,
    onWait: (event) => {
      extra.onWait?.(event);
      if (!extra.quietWaits) say(args, event.message);
    },
    // Runs back to back share a token rather than each taking one of the hour's.
    tokenCache: true,
    windowStores: shared?.windowStores,
    fail: (message) => new UsageError(message),
  }).catch(async (error: unknown) => {
    await shared?.close();
    throw error;
  });
  return { ...connection, journals: shared?.journals, close: async () => {
    await connection.close();
    await shared?.close();
  } };
}

const EMBEDDED_WRITE_REFUSAL = [
  'no --base-url or WDS_BASE_URL: an import would go to the embedded emulator, which forgets everything when this command ends.',
  'Point it at the service with --base-url https://... (or WDS_BASE_URL) and the consumer key and secret,',
  'or at a running emulator: start `wds-files emulator` in another terminal and pass the --base-url it prints.',
  'To try the import against the embedded emulator all the same, add --emulator.',
].join('\n  ');
