/**
 * The LegacyClient of the legacy commands, from the same connection settings as every command
 * (`--base-url` or WDS_BASE_URL, the consumer key and secret); without a base URL, the embedded
 * emulator with the sample company, which serves the legacy interface too.
 */
import { LegacyClient, type LegacyClientLimits, type LegacyVersion } from '../../client/legacy/index.js';
import { parseLimitsSetting } from '../../client/limits-setting.js';
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
  const limits = legacyLimits();
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
    ...limits,
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

/**
 * WDS_LEGACY_LIMITS: the legacy client's own windows, `off` or e.g. `request=60/1h,token=5/1h`, for
 * a contract with other limits or an emulator whose clock runs fast. The legacy interface has no
 * window for updates alone, so `update=` is refused rather than ignored.
 */
function legacyLimits(): { limits?: false | LegacyClientLimits } {
  const text = process.env.WDS_LEGACY_LIMITS;
  if (!text) return {};
  let setting;
  try {
    setting = parseLimitsSetting(text, 'WDS_LEGACY_LIMITS');
  } catch {
    throw new UsageError(`WDS_LEGACY_LIMITS must be "off" or a list such as request=60/1h,token=5/1h (a whole number of 1 or more per duration in ms, s, m or h); got "${text.trim()}"`);
  }
  if (setting === false) return { limits: false };
  if (setting.update) throw new UsageError('WDS_LEGACY_LIMITS takes request= and token= only: the legacy interface has no window for updates alone');
  return { limits: { ...(setting.request ? { request: setting.request } : {}), ...(setting.token ? { token: setting.token } : {}) } };
}
