/**
 * `wds-files emulator` as a child process serves the legacy interface too: its banner names the
 * address, and a token exchange and a sheet read there work against the sample company.
 */
import { describe, expect, it } from 'vitest';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { spawnCli } from '../helpers/cli-process.js';
import { KEY, SECRET } from '../helpers/emulator.js';

function firstLine(child: ChildProcessWithoutNullStreams): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no banner line; stderr so far: ${err}`)), 30_000);
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const end = out.indexOf('\n');
      if (end >= 0) {
        clearTimeout(timer);
        resolve(out.slice(0, end));
      }
    });
  });
}

describe('wds-files emulator', () => {
  it('prints legacy_api with --json, and the legacy interface answers there', async () => {
    const child = spawnCli(['emulator', '--port', '0', '--no-maintenance', '--json']);
    try {
      const banner = JSON.parse(await firstLine(child));
      expect(banner.legacy_api).toBe(`${banner.base_url}/api/v1.2`);
      const post = async (path: string, body: unknown, token?: string) => {
        const res = await fetch(`${banner.legacy_api}${path}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...(token ? { 'X-SERVICE-TOKEN': token } : {}) },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      const token = await post('/get_token', { consumer_key: KEY, consumer_secret: SECRET });
      expect(token.status).toBe(200);
      expect(token.body.expires_in).toBe('3600');
      const sheet = await post('/sheet/0', {}, token.body.access_token);
      expect(sheet.status).toBe(200);
      expect(sheet.body.data.length).toBeGreaterThan(0);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
