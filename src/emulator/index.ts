/** Starting the emulator in-process (tests, benchmarks, `npm start`) and from the CLI. */
import { Emulator } from './server.js';
import { buildEmulatorConfig, type EmulatorOptions } from './config.js';

export { Emulator } from './server.js';
export { DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET, EmulatorConfigError, type EmulatorOptions } from './config.js';
export { SeedError } from './seed.js';

export interface RunningEmulator {
  /** `http://host:port`: the service's base URL (the API is under `/api/v2.0`). */
  url: string;
  emulator: Emulator;
  close: () => Promise<void>;
}

export async function startEmulator(options: EmulatorOptions & { port?: number; host?: string } = {}): Promise<RunningEmulator> {
  const emulator = new Emulator(await buildEmulatorConfig(options));
  const url = await emulator.listen(options.port ?? 8787, options.host ?? '127.0.0.1');
  return { url, emulator, close: () => emulator.close() };
}
