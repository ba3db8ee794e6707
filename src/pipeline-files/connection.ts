/**
 * The client a pipeline file's run, plan or online check uses: the file's `connection`, else
 * WDS_BASE_URL, WDS_CONSUMER_KEY and WDS_CONSUMER_SECRET; with no base URL at all, the embedded
 * emulator with the sample company when the caller hands one in (the CLI does, as for its other
 * commands: src/cli/embedded.ts; nothing here imports the emulator).
 * The CLI's commands connect through the same two steps (endpointOf, clientFor), naming their flags
 * where a file names its keys.
 */
import { readFile } from 'node:fs/promises';
import { WdsClient } from '../client/client.js';
import type { WaitEvent } from '../client/limiter.js';
import { parseLimitsSetting } from '../client/limits-setting.js';
import type { Logger } from '../client/options.js';
import type { WindowStores } from '../client/window-store.js';
import { baseUrlProblem } from '../client/option-schema.js';
import { redactUrl, registerSecret } from '../util/redact.js';
import type { Dispatcher } from 'undici';
import type { LoadedPipeline } from './load.js';

/** A service started for one run, and how to stop it. */
export interface StartedService {
  url: string;
  close(): Promise<void>;
}

/**
 * The service a run uses when no base URL is set: the CLI's embedded emulator with the sample
 * company. Its credentials are known before it starts, so that a target is checked first.
 */
export interface EmbeddedService {
  credentials(): Promise<{ consumerKey: string; consumerSecret: string }>;
  start(): Promise<StartedService>;
}

export interface PipelineConnection {
  client: WdsClient;
  embedded?: StartedService;
  close(): Promise<void>;
}

export interface ConnectOptions {
  env?: NodeJS.ProcessEnv;
  /** Started when no base URL is set; without it, a file with no base URL is refused. */
  embedded?: EmbeddedService;
  dryRun?: boolean;
  log?: (line: string) => void;
  /** The client's request lines and warnings. */
  logger?: Logger;
  /** Keep the access token between runs (see {@link ClientSettings.tokenCache}). Default false. */
  tokenCache?: boolean;
  /** Where the company's limit windows are shared (see {@link ClientSettings.windowStores}). */
  windowStores?: WindowStores;
  /** Connection pools shared with other runs (see {@link ClientSettings.dispatchers}). */
  dispatchers?: ClientDispatchers;
}

/** Connection pools a client uses instead of its own: for reads, and for updates and tokens. */
export interface ClientDispatchers {
  reads: Dispatcher;
  updates: Dispatcher;
}

/** A connection problem a person fixes in the file or the environment. */
export class PipelineConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PipelineConnectionError';
  }
}

/** Where a run connects: the service's address and the company's credentials. */
export interface Endpoint {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  /** Set when no base URL was given and the embedded emulator was started for this run. */
  embedded?: StartedService;
}

/** What the caller was given (flags, or a file's `connection`), and how it names them to the user. */
export interface EndpointSettings {
  baseUrl?: string;
  consumerKey?: string;
  consumerSecret?: string;
  /** A file holding the consumer secret, instead of `consumerSecret`. */
  consumerSecretFile?: string;
  /** The setting's name in a message, e.g. `--consumer-key` or `connection.consumer_key`. */
  names: { baseUrl: string; consumerKey: string; consumerSecret: string; consumerSecretFile: string };
  /** Started when there is no base URL; without it, no base URL is an error. */
  embedded?: EmbeddedService;
  /** Told the embedded emulator's address when it is used, to say so in the caller's words. */
  onEmbedded?: (url: string) => void;
  /** The error to throw for a problem of the settings. */
  fail: (message: string) => Error;
}

/**
 * The settings given, else the environment's; without a base URL, the embedded emulator (it
 * serves the legacy interface too). A missing key or secret is an error naming the setting and
 * the variable.
 */
export async function endpointOf(settings: EndpointSettings, env: NodeJS.ProcessEnv = process.env): Promise<Endpoint> {
  const { names } = settings;
  let baseUrl = settings.baseUrl ?? env.WDS_BASE_URL;
  let consumerKey = settings.consumerKey ?? env.WDS_CONSUMER_KEY;
  if (settings.consumerSecret !== undefined && settings.consumerSecretFile !== undefined) throw settings.fail(`give ${names.consumerSecret} or ${names.consumerSecretFile}, not both`);
  let consumerSecret = settings.consumerSecretFile !== undefined ? await secretFromFile(settings) : settings.consumerSecret ?? env.WDS_CONSUMER_SECRET;
  registerSecret(consumerSecret);
  // Checked here, where the setting has its name, so that a bad address is the caller's usage error.
  const problem = baseUrl ? baseUrlProblem(baseUrl) : null;
  if (problem) throw settings.fail(`${settings.baseUrl ? names.baseUrl : 'WDS_BASE_URL'} ${problem}, got "${redactUrl(baseUrl!)}"`);
  let embedded: StartedService | undefined;
  if (!baseUrl) {
    if (!settings.embedded) throw settings.fail(`no service to connect to: set ${names.baseUrl}, or WDS_BASE_URL`);
    ({ consumerKey, consumerSecret } = await settings.embedded.credentials());
    embedded = await settings.embedded.start();
    baseUrl = embedded.url;
    settings.onEmbedded?.(baseUrl);
  }
  const missing = [!consumerKey && `${names.consumerKey} (or WDS_CONSUMER_KEY)`, !consumerSecret && `${names.consumerSecret} (or WDS_CONSUMER_SECRET)`].filter(Boolean);
  if (missing.length) {
    await embedded?.close();
    throw settings.fail(`connecting to ${redactUrl(baseUrl)} needs ${missing.join(' and ')}`);
  }
  return { baseUrl, consumerKey: consumerKey!, consumerSecret: consumerSecret!, embedded };
}

/**
 * The secret of `consumerSecretFile`: its first line, as systemd credentials, Docker and
 * Kubernetes secrets hold it. Empty or unreadable: refused.
 */
async function secretFromFile(settings: EndpointSettings): Promise<string> {
  const { names } = settings;
  const file = settings.consumerSecretFile!;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw settings.fail(`${names.consumerSecretFile} ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  const secret = text.split(/\r?\n/, 1)[0]!;
  registerSecret(secret);
  if (!secret.trim()) throw settings.fail(`${names.consumerSecretFile} ${file}: its first line is empty; it should hold the consumer secret`);
  return secret;
}

export interface ClientSettings {
  env?: NodeJS.ProcessEnv;
  dryRun?: boolean;
  logger?: Logger;
  onWait?: (event: WaitEvent) => void;
  /**
   * Keep the access token between runs (the client's `tokenCache`), unless WDS_TOKEN_CACHE is
   * `off` or the run uses the embedded emulator, which is a new company each time. Default false.
   */
  tokenCache?: boolean;
  /**
   * Where the company's limit windows are shared with other machines (the fleet's database),
   * instead of the state file on this one. Not used with the embedded emulator. Default: none.
   */
  windowStores?: WindowStores;
  /**
   * Connection pools shared with other runs (a fleet worker's), kept open when the client closes,
   * so the next run reuses the connections instead of opening its own. Default: the client's own.
   */
  dispatchers?: ClientDispatchers;
  /** The error to throw for a WDS_CLIENT_LIMITS that does not read. */
  fail: (message: string) => Error;
}

/** Whether a run keeps its token between runs: asked for, not switched off, not the embedded emulator. */
export function keepsToken(asked: boolean | undefined, embedded: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return !!asked && !embedded && env.WDS_TOKEN_CACHE?.trim().toLowerCase() !== 'off';
}

/** The client of an endpoint, with WDS_CLIENT_LIMITS applied; closing it closes the embedded emulator too. */
export async function clientFor(endpoint: Endpoint, settings: ClientSettings): Promise<PipelineConnection> {
  const { baseUrl, consumerKey, consumerSecret, embedded } = endpoint;
  const text = (settings.env ?? process.env).WDS_CLIENT_LIMITS;
  let limits;
  try {
    limits = text ? parseLimitsSetting(text) : undefined;
  } catch (error) {
    await embedded?.close();
    throw settings.fail((error as Error).message);
  }
  const client = new WdsClient({
    baseUrl,
    consumerKey,
    consumerSecret,
    dryRun: settings.dryRun ?? false,
    // `off` reads as false, which switches the windows off: only no setting leaves the defaults.
    ...(limits !== undefined ? { limits } : {}),
    // The embedded emulator is a fresh company each run: its windows are not shared with others.
    ...(embedded ? { stateFile: false as const } : settings.windowStores ? { windowStore: settings.windowStores.storeFor(consumerKey, 'v2') } : {}),
    tokenCache: keepsToken(settings.tokenCache, !!embedded, settings.env),
    ...(settings.logger ? { logger: settings.logger } : {}),
    ...(settings.onWait ? { onWait: settings.onWait } : {}),
    ...(settings.dispatchers ? { dispatcher: settings.dispatchers.reads, updateDispatcher: settings.dispatchers.updates } : {}),
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

export async function connectPipeline(pipeline: LoadedPipeline, options: ConnectOptions = {}): Promise<PipelineConnection> {
  const env = options.env ?? process.env;
  const fail = (message: string): Error => new PipelineConnectionError(`${pipeline.file}: ${message}`);
  const { base_url: baseUrl, consumer_key: consumerKey, consumer_secret: consumerSecret, consumer_secret_file: consumerSecretFile } = pipeline.connection;
  if (!(baseUrl ?? env.WDS_BASE_URL) && !options.embedded) throw fail('no service to connect to: set connection.base_url in the file, or WDS_BASE_URL');
  const endpoint = await endpointOf({
    baseUrl, consumerKey, consumerSecret, consumerSecretFile, embedded: options.embedded, fail,
    onEmbedded: (url) => options.log?.(`no connection.base_url or WDS_BASE_URL: using the embedded emulator with the sample company at ${url}`),
    names: { baseUrl: 'connection.base_url', consumerKey: 'connection.consumer_key', consumerSecret: 'connection.consumer_secret', consumerSecretFile: 'connection.consumer_secret_file' },
  }, env);
  return clientFor(endpoint, {
    env, dryRun: options.dryRun, logger: options.logger, onWait: (event) => options.log?.(event.message), fail: (message) => new PipelineConnectionError(message),
    tokenCache: options.tokenCache, windowStores: options.windowStores, dispatchers: options.dispatchers,
  });
}
