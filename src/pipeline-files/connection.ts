/**
 * The client a pipeline file's run, plan or online check uses: the file's `connection`, else
 * WDS_BASE_URL, WDS_CONSUMER_KEY and WDS_CONSUMER_SECRET; with no base URL at all, the embedded
 * emulator with the sample company when the caller allows it (the CLI does, as its other commands).
 */
import { WdsClient } from '../client/client.js';
import { parseLimitsSetting } from '../client/limits-setting.js';
import type { Logger } from '../client/options.js';
import type { RunningEmulator } from '../emulator/index.js';
import { registerSecret } from '../util/redact.js';
import type { LoadedPipeline } from './load.js';

export interface PipelineConnection {
  client: WdsClient;
  embedded?: RunningEmulator;
  close(): Promise<void>;
}

export interface ConnectOptions {
  env?: NodeJS.ProcessEnv;
  /** Start the embedded emulator when no base URL is set. Default false. */
  embedded?: boolean;
  /** The sample company the embedded emulator starts with. */
  seed?: string;
  dryRun?: boolean;
  log?: (line: string) => void;
  /** The client's request lines and warnings. */
  logger?: Logger;
}

/** A connection problem a person fixes in the file or the environment. */
export class PipelineConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PipelineConnectionError';
  }
}

export async function connectPipeline(pipeline: LoadedPipeline, options: ConnectOptions = {}): Promise<PipelineConnection> {
  const env = options.env ?? process.env;
  let baseUrl = pipeline.connection.base_url ?? env.WDS_BASE_URL;
  let consumerKey = pipeline.connection.consumer_key ?? env.WDS_CONSUMER_KEY;
  let consumerSecret = pipeline.connection.consumer_secret ?? env.WDS_CONSUMER_SECRET;
  registerSecret(consumerSecret);
  let embedded: RunningEmulator | undefined;
  if (!baseUrl) {
    if (!options.embedded) throw new PipelineConnectionError(`${pipeline.file}: no service to connect to: set connection.base_url in the file, or WDS_BASE_URL`);
    const { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET } = await import('../emulator/index.js');
    embedded = await startEmulator({ port: 0, seed: options.seed, maintenance: false });
    baseUrl = embedded.url;
    consumerKey = DEFAULT_CONSUMER_KEY;
    consumerSecret = DEFAULT_CONSUMER_SECRET;
    options.log?.(`no connection.base_url or WDS_BASE_URL: using the embedded emulator with the sample company at ${baseUrl}`);
  }
  const missing = [!consumerKey && 'connection.consumer_key (or WDS_CONSUMER_KEY)', !consumerSecret && 'connection.consumer_secret (or WDS_CONSUMER_SECRET)'].filter(Boolean);
  if (missing.length) {
    await embedded?.close();
    throw new PipelineConnectionError(`${pipeline.file}: connecting to ${baseUrl} needs ${missing.join(' and ')}`);
  }
  let limits;
  try {
    limits = env.WDS_CLIENT_LIMITS ? parseLimitsSetting(env.WDS_CLIENT_LIMITS) : undefined;
  } catch (error) {
    await embedded?.close();
    throw new PipelineConnectionError((error as Error).message);
  }
  const client = new WdsClient({
    baseUrl,
    consumerKey: consumerKey!,
    consumerSecret: consumerSecret!,
    dryRun: options.dryRun ?? false,
    ...(limits ? { limits } : {}),
    // The embedded emulator is a fresh company each run: its windows are not shared with others.
    ...(embedded ? { stateFile: false as const } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    onWait: (event) => options.log?.(event.message),
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
