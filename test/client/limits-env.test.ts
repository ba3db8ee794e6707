/**
 * WDS_CLIENT_LIMITS as the CLI and pipeline runs read it (src/pipeline-files/connection.ts):
 * `off` switches the client's own windows off, so six update requests in a minute go out at once
 * where the default window (5 a minute) would make the sixth wait.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../../src/pipeline-files/connection.js';

const emu = useEmulator({ seed: 'samples/company', maintenance: false, limits: { updatesPerMinute: 10_000, requestsPerHour: 1_000_000 } });

it('WDS_CLIENT_LIMITS=off: six update requests in a row, none waited for', async () => {
  // The windows' state file is this test's own, so that no other run's requests count here.
  process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'wds-limits-env-'));
  const waits: string[] = [];
  const connection = await clientFor(
    { baseUrl: emu().url, consumerKey: KEY, consumerSecret: SECRET },
    { env: { WDS_CLIENT_LIMITS: 'off' }, dryRun: true, onWait: (event) => waits.push(event.message), fail: (message) => new Error(message) },
  );
  try {
    const code = String((await connection.client.members.list()).member_data[0]!.code);
    const started = Date.now();
    for (let i = 0; i < 6; i += 1) await connection.client.members.partialUpdate([{ code, mail: `m${i}@example.test` }]);
    expect(waits).toEqual([]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await emu().control('GET', '/stats')).rate_limited).toBe(0);
  } finally {
    await connection.close();
  }
}, 30_000);
