/**
 * The LegacyClient of the legacy commands, from the same connection settings as every command
 * (`--base-url` or WDS_BASE_URL, the consumer key and secret); without a base URL, the embedded
 * emulator with the sample company, which serves the legacy interface too.
 */
import { LegacyClient, type LegacyClientLimits, type LegacyVersion } from '../../client/v1/index.js';
import { parseLimitsSetting } from '../../client/limits-setting.js';
import { UsageError, resolveEndpoint, say, type ConnectionArgs } from '../connection.js';
import { clientLogger } from '../log.js';
import { keepsToken } from '../../pipeline-files/connection.js';

export interface LegacyConnection {
  client: LegacyClient;
  close: () => Promise<void>;
}

export async function connectLegacy(args: ConnectionArgs, options: { version: LegacyVersion; dryRun?: boolean; signal?: AbortSignal }): Promise<LegacyConnection> {
  const limits = legacyLimits();
  const { baseUrl, consumerKey, consumerSecret, embedded } = await resolveEndpoint(args);
  const { openSharedDatabase } = await import('../database.js');
  // The embedded emulator is a fresh company: nothing of it is shared.
  const shared = embedded ? undefined : await openSharedDatabase(args);
  const client = new LegacyClient({
    baseUrl,
    consumerKey,
    consumerSecret,
    version: options.version,
    dryRun: options.dryRun ?? false,
    signal: options.signal,
    logger: clientLogger,
    ...limits,
    // The embedded emulator is a fresh company each run: its windows are not shared with others.
    ...(embedded ? { stateFile: false as const } : shared ? { windowStore: shared.windowStores.storeFor(consumerKey, 'v1') } : {}),
    // 5 tokens an hour: runs back to back share one rather than each taking its own.
    tokenCache: keepsToken(true, !!embedded),
    onWait: (event) => say(args, event.message),
  });
  return {
    client,
    close: async () => {
      await client.close();
      await embedded?.close();
      await shared?.close();
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
