/**
 * The embedded emulator a command runs against when no base URL is set: the sample company on a
 * port of its own. Only the CLI starts the emulator (DESIGN.md section 1): the pipeline files'
 * connection is handed this, and loads none of it until a run needs it.
 */
import type { EmbeddedService } from '../pipeline-files/connection.js';
import { SAMPLE_COMPANY_DIR } from './paths.js';

export const EMBEDDED_EMULATOR: EmbeddedService = {
  credentials: async () => {
    const { DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET } = await import('../emulator/config.js');
    return { consumerKey: DEFAULT_CONSUMER_KEY, consumerSecret: DEFAULT_CONSUMER_SECRET };
  },
  start: async () => {
    // The emulator (and sharp, which it uses for trimming) is loaded only when it is needed.
    const { startEmulator } = await import('../emulator/index.js');
    return startEmulator({ port: 0, seed: SAMPLE_COMPANY_DIR, maintenance: false });
  },
};
