/** A client of the test emulator with its limiter windows in a temporary state file. */
import { mkdtempSync } from 'node:fs';
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
