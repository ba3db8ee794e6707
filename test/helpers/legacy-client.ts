/** A LegacyClient of the test emulator with its own windows off and short backoffs and polls. */
import { LegacyClient, type LegacyClientOptions } from '../../src/index.js';
import { KEY, SECRET } from './emulator.js';

export function legacyClientFor(baseUrl: string, options: Partial<LegacyClientOptions> = {}): LegacyClient {
  return new LegacyClient({
    baseUrl,
    consumerKey: KEY,
    consumerSecret: SECRET,
    stateFile: false,
    limits: false,
    retry: { baseDelayMs: 10, maxDelayMs: 100 },
    poll: { intervalMs: 20, maxIntervalMs: 200 },
    ...options,
  });
}
