/**
 * `api` and `legacy api` as a user runs them, the real CLI against the emulator: `api POST /token`
 * is refused as `/get_token` is, the usage message's example paths are paths of the API, `--report`
 * writes the request made and how it ended, runs back to back share one token kept (mode 0600,
 * never printed) in the state folder, and runs whose connection was refused leave the legacy
 * interface's 5 tokens an hour whole.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli, type CliRun } from '../helpers/cli-process.js';
import { findOperation } from '../../src/spec/operations.js';

// CLI children on a machine shared with other test files: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 120_000;
const emu = useEmulator({ maintenance: false });

const dirs = (): { XDG_STATE_HOME: string; XDG_CACHE_HOME: string } => ({
  XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-api-state-')),
  XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-api-cache-')),
});

const api = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> => runCli(['api', ...args, ...connectionArgs(emu())], env);
const stats = async (): Promise<{ tokens_issued: number; requests: Record<string, number> }> => emu().control('GET', '/stats');

/** The legacy client's limit windows as the runs sharing `cache` left them. */
function legacyWindows(cache: string): { token: number[]; request: number[] } {
  const folder = join(cache, 'wds-files');
  const name = readdirSync(folder).find((n) => n.startsWith('legacy-limits-') && n.endsWith('.json'))!;
  return (JSON.parse(readFileSync(join(folder, name), 'utf8')) as { windows: { token: number[]; request: number[] } }).windows;
}

/** Every token file under a state folder, with its mode. */
function tokenFiles(state: string): { path: string; mode: number; token: string }[] {
  const folder = join(state, 'wds-files', 'tokens');
  return readdirSync(folder).map((name) => {
    const path = join(folder, name);
    return { path, mode: statSync(path).mode & 0o777, token: (JSON.parse(readFileSync(path, 'utf8')) as { access_token: string }).access_token };
  });
}

describe('api refusals and messages', () => {
  it('api POST /token is refused before anything is sent, as legacy api /get_token is', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const before = await stats();
    const run = await api(['POST', '/token']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('/token is called for you on every command (its token is never printed)');
    const legacy = await runCli(['legacy', 'api', '/get_token', ...connectionArgs(emu())]);
    expect(legacy.code, legacy.stderr).toBe(2);
    expect(legacy.stderr).toContain('/get_token is called for you');
    expect((await stats()).tokens_issued).toBe(before.tokens_issued);
  });

  it('an unknown path: the message\'s example paths are paths of API v2', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const run = await api(['GET', '/sheets/2/members']);
    expect(run.code, run.stderr).toBe(2);
    const examples = /paths look like (.*)$/m.exec(run.stderr)?.[1]?.split(/, | or /) ?? [];
    expect(examples.length).toBeGreaterThan(2);
    for (const example of examples) expect(findOperation('GET', example).kind, example).toBe('found');
  });
});

describe('api --report', () => {
  it('writes the request and its outcome; a failed call too, with its code', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-api-report-'));
    const ok = await api(['GET', '/members', '--report', join(folder, 'ok.json')]);
    expect(ok.code, ok.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(folder, 'ok.json'), 'utf8')) as Record<string, any>;
    expect(report).toMatchObject({ command: 'api', outcome: 'ok', request: { method: 'GET', path: '/members', operation: 'members.list', dry_run: false } });
    expect(report.requests.sent).toBe(2); // the token and the call
    expect(JSON.parse(ok.stdout)).toHaveProperty('member_data');

    const missing = await api(['GET', '/sheets/999', '--report', join(folder, 'sub', 'missing.json')]);
    expect(missing.code, missing.stderr).toBe(1);
    const failed = JSON.parse(readFileSync(join(folder, 'sub', 'missing.json'), 'utf8')) as Record<string, any>;
    expect(failed).toMatchObject({ outcome: 'failed', request: { path: '/sheets/999' }, error: { code: 'NOT_FOUND', status: 404 } });
    expect(JSON.stringify([report, failed])).not.toContain(SECRET);
  });

  it('a --report that cannot be written is a usage error before any request', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-api-report-'));
    mkdirSync(join(folder, 'taken'));
    const before = await stats();
    const run = await api(['GET', '/members', '--report', join(folder, 'taken')]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('is a folder');
    expect((await stats()).requests['GET /members'] ?? 0).toBe(before.requests['GET /members'] ?? 0);
  });
});

describe('a token kept between runs', () => {
  it('two api runs share one token, kept 0600 in the state folder and never printed; WDS_TOKEN_CACHE=off issues anew', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const env = dirs();
    const before = (await stats()).tokens_issued;
    const first = await api(['GET', '/roles', '-v'], env);
    const second = await api(['GET', '/roles', '-v'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    expect(first.stderr).toMatch(/^POST \/api\/v2\.0\/token 200/m);
    expect(second.stderr).not.toMatch(/\/token/);
    expect((await stats()).tokens_issued).toBe(before + 1);
    const [file, ...others] = tokenFiles(env.XDG_STATE_HOME);
    expect(others).toEqual([]);
    expect(file!.mode).toBe(0o600);
    for (const run of [first, second]) expect(`${run.stdout}${run.stderr}`).not.toContain(file!.token);

    const off = await api(['GET', '/roles'], { ...env, WDS_TOKEN_CACHE: 'off' });
    expect(off.code, off.stderr).toBe(0);
    expect((await stats()).tokens_issued).toBe(before + 2);
  });

  it('two legacy api runs share one of the 5 tokens an hour', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const env = dirs();
    const first = await runCli(['legacy', 'api', '/department', '-v', ...connectionArgs(emu())], env);
    const second = await runCli(['legacy', 'api', '/department', '-v', ...connectionArgs(emu())], env);
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    expect(first.stderr).toMatch(/^POST \/api\/v1\.2\/get_token 200/m);
    expect(second.stderr).not.toMatch(/get_token/);
    expect(legacyWindows(env.XDG_CACHE_HOME).token).toHaveLength(1);
  });

  it('a legacy run whose connection is refused takes none of the 5 tokens; the next run goes at once', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const env = dirs();
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as { port: number };
    await new Promise((done) => server.close(done));
    // Refused before anything answered there: said at once, and charged nothing.
    const refused = await runCli(['legacy', 'api', '/department', '--base-url', `http://127.0.0.1:${port}`, '--consumer-key', KEY, '--consumer-secret', SECRET], env);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('ECONNREFUSED');
    expect(refused.stderr).not.toContain('tokens per hour reached');
    expect(legacyWindows(env.XDG_CACHE_HOME)).toMatchObject({ token: [], request: [] });

    const next = await runCli(['legacy', 'api', '/department', ...connectionArgs(emu())], env);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).not.toContain('waiting');
  });
});
