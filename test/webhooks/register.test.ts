/**
 * `wds-files webhook register` through the real CLI against the emulator: the setting as the
 * service holds it, the generated secret kept only in a file of mode 0600 and never printed,
 * plain http refused unless allowed, and the eleventh setting refused before anything is sent.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { companyOf } from '../helpers/fixtures.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { MAX_WEBHOOK_SETTINGS } from '../../src/spec/limits.js';

const emu = useEmulator({ allowHttpWebhooks: true });
const data = () => companyOf(emu()).data;
const register = (args: string[], env: NodeJS.ProcessEnv = {}) => runCli(['webhook', 'register', ...args, ...connectionArgs(emu())], env);
const registerRequests = async (): Promise<number> => (await emu().control('GET', '/stats')).requests['POST /webhook'] ?? 0;

describe('webhook register', { timeout: 180_000 }, () => {
  beforeEach(() => {
    data().webhooks = [];
  });

  it('registers the setting with a generated secret written to a new file of mode 0600, and prints only its path', async () => {
    const state = mkdtempSync(join(tmpdir(), 'wds-hook-state-'));
    const run = await register(['--url', 'https://hooks.example.com/wds', '--events', 'member_created,member_deleted'], { XDG_STATE_HOME: state });
    expect(run.code, run.stderr).toBe(0);
    const [hook] = data().webhooks;
    expect(hook).toMatchObject({ url: 'https://hooks.example.com/wds', events: ['member_created', 'member_deleted'] });
    const file = /written to (\S+) \(mode 0600\)/.exec(run.stdout)?.[1];
    expect(file, run.stdout).toBeDefined();
    expect(file!.startsWith(join(state, 'wds-files'))).toBe(true);
    expect(statSync(file!).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file!, 'utf8').trim();
    expect(secret).toBe(hook!.secret_token);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(run.stdout + run.stderr).not.toContain(secret);

    // A second register for the same URL would need the same default file: it is never overwritten.
    const again = await register(['--url', 'https://hooks.example.com/wds'], { XDG_STATE_HOME: state });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${file} already exists`);
    expect(readFileSync(file!, 'utf8').trim()).toBe(secret);
    expect(data().webhooks).toHaveLength(1);
  });

  it('takes the secret from WDS_WEBHOOK_TOKEN or an existing --token-file, and says so without printing it', async () => {
    const fromEnv = await register(['--url', 'https://a.example.com/hook', '--json'], { WDS_WEBHOOK_TOKEN: 'env-token-0123456789' });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    const line = JSON.parse(fromEnv.stdout) as Record<string, unknown>;
    expect(line).toMatchObject({ status: 'ok', url: 'https://a.example.com/hook', verification: { source: 'environment' } });
    expect(fromEnv.stdout + fromEnv.stderr).not.toContain('env-token-0123456789');

    const file = join(mkdtempSync(join(tmpdir(), 'wds-hook-')), 'token');
    writeFileSync(file, 'file-token-abcdefghij\n', { mode: 0o600 });
    const fromFile = await register(['--url', 'https://b.example.com/hook', '--token-file', file]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stdout).toContain(`secret token: from ${file}`);
    expect(fromFile.stdout + fromFile.stderr).not.toContain('file-token-abcdefghij');
    expect(data().webhooks.map((h) => h.secret_token)).toEqual(['env-token-0123456789', 'file-token-abcdefghij']);
  });

  it('refuses http:// unless --allow-http, and sends nothing', async () => {
    const before = await registerRequests();
    const state = mkdtempSync(join(tmpdir(), 'wds-hook-state-'));
    const refused = await register(['--url', 'http://127.0.0.1:9/hook'], { XDG_STATE_HOME: state });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('https://');
    expect(refused.stderr).toContain('--allow-http');
    expect(await registerRequests()).toBe(before);
    expect(existsSync(join(state, 'wds-files', 'webhook-tokens'))).toBe(false);

    const allowed = await register(['--url', 'http://127.0.0.1:9/hook', '--allow-http'], { XDG_STATE_HOME: state });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(data().webhooks.map((h) => h.url)).toEqual(['http://127.0.0.1:9/hook']);
  });

  it(`refuses the ${MAX_WEBHOOK_SETTINGS + 1}th setting before sending it, and leaves no token file`, async () => {
    const state = mkdtempSync(join(tmpdir(), 'wds-hook-state-'));
    for (let i = 1; i <= MAX_WEBHOOK_SETTINGS; i += 1) {
      const made = await emu().api('POST', '/webhook', { url: `https://h${i}.example.com/hook`, events: ['member_created'], secret_token: `token-${i}-abcdefgh` });
      expect(made.status).toBe(200);
    }
    expect(data().webhooks).toHaveLength(MAX_WEBHOOK_SETTINGS);
    const before = await registerRequests();
    const eleventh = await register(['--url', 'https://h11.example.com/hook'], { XDG_STATE_HOME: state });
    expect(eleventh.code).toBe(1);
    expect(eleventh.stderr).toContain(`holds ${MAX_WEBHOOK_SETTINGS} webhook settings, the most it allows`);
    expect(eleventh.stderr).toContain('nothing was sent');
    expect(await registerRequests()).toBe(before);
    expect(data().webhooks).toHaveLength(MAX_WEBHOOK_SETTINGS);
    const folder = join(state, 'wds-files', 'webhook-tokens');
    expect(existsSync(folder) ? readdirSync(folder) : []).toEqual([]);
  });
});
