/**
 * The LegacyClient of the legacy commands, from the same connection settings as every command
 * (`--base-url` or WDS_BASE_URL, the consumer key and secret); without a base URL, the embedded
 * emulator with the sample company, which serves the legacy interface too.
 */
import { LegacyClient, type LegacyVersion } from '../../client/legacy/index.js';
import type { RunningEmulator } from '../../emulator/index.js';
import { UsageError, say, type ConnectionArgs } from '../connection.js';
import { clientLogger } from '../log.js';
import { SAMPLE_COMPANY_DIR } from '../paths.js';

export interface LegacyConnection {
  client: LegacyClient;
  close: () => Promise<void>;
}

export async function connectLegacy(args: ConnectionArgs, options: { version: LegacyVersion; dryRun?: boolean; signal?: AbortSignal }): Promise<LegacyConnection> {
  let baseUrl = args['base-url'] ?? process.env.WDS_BASE_URL;
  let consumerKey = args['consumer-key'] ?? process.env.WDS_CONSUMER_KEY;
  let consumerSecret = args['consumer-secret'] ?? process.env.WDS_CONSUMER_SECRET;
  let embedded: RunningEmulator | undefined;
  if (!baseUrl) {
    const { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET } = await import('../../emulator/index.js');
    embedded = await startEmulator({ port: 0, seed: SAMPLE_COMPANY_DIR, maintenance: false });
    baseUrl = embedded.url;
    consumerKey = DEFAULT_CONSUMER_KEY;
    consumerSecret = DEFAULT_CONSUMER_SECRET;
    say(args, `No --base-url or WDS_BASE_URL: using the embedded emulator with the sample company at ${baseUrl}`);
  }
  const missing = [!consumerKey && '--consumer-key (or WDS_CONSUMER_KEY)', !consumerSecret && '--consumer-secret (or WDS_CONSUMER_SECRET)'].filter(Boolean);
  if (missing.length) throw new UsageError(`connecting to ${baseUrl} needs ${missing.join(' and ')}`);
  const client = new LegacyClient({
    baseUrl,
    consumerKey: consumerKey!,
    consumerSecret: consumerSecret!,
    version: options.version,
    dryRun: options.dryRun ?? false,
    signal: options.signal,
    logger: clientLogger,
    // The embedded emulator is a fresh company each run: its windows are not shared with others.
    ...(embedded ? { stateFile: false as const } : {}),
    onWait: (event) => say(args, event.message),
  });
  return {
    client,
    close: async () => {
      await client.close();
      await embedded?.close();
    },
  };
}
