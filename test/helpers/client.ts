/** A client of the test emulator with its limiter windows in a temporary state file. */
import { mkdtempSync } from 'node:fs';
import { afterAll } from 'vitest';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WdsClient, type WdsClientOptions } from '../../src/index.js';
import { KEY, SECRET, type TestEmulator } from './emulator.js';

export function tempStateFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'wds-state-')), 'limits.json');
}

export function clientFor(emu: TestEmulator, options: Partial<WdsClientOptions> = {}): WdsClient {
  return new WdsClient({
    baseUrl: emu.url,
    consumerKey: KEY,
    consumerSecret: SECRET,
    stateFile: tempStateFile(),
    retry: { baseDelayMs: 10, maxDelayMs: 100 },
    ...options,
  });
}

/**
 * A client of the test file's emulator, made at first use and closed when the file's tests end:
 * `const api = useClient(emu);` then `api()` in the tests.
 */
export function useClient(emu: () => TestEmulator, options: Partial<WdsClientOptions> = {}): () => WdsClient {
  let client: WdsClient | undefined;
  afterAll(async () => {
    await client?.close();
  });
  return () => (client ??= clientFor(emu(), options));
}
