/**
 * The conventions users of gh, rclone and restic expect, through the real CLI: -h with examples,
 * environment and exit codes; -v request lines and --log-file JSON lines that name no secret;
 * no colour on a pipe; a completion script that completes; "did you mean" naming the word typed;
 * number options refused with their rule and the word typed; -q accepted everywhere.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator, SECRET, KEY } from '../helpers/emulator.js';
import { CLI_MAIN, ROOT, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.js';

describe('help', () => {
  it('-h shows the commands, examples, environment variables and exit codes', async () => {
    const run = await runCli(['-h']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Examples:');
    expect(run.stdout).toMatch(/wds-files photos export -o photos\.zip/);
    for (const name of ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET', 'WDS_CLIENT_LIMITS', 'NO_COLOR', 'XDG_STATE_HOME', 'XDG_CACHE_HOME']) {
      expect(run.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    }
    for (const code of [0, 1, 2, 3, 130, 143]) expect(run.stdout).toMatch(new RegExp(`^  ${code} +\\S`, 'm'));
    expect(run.stdout).toMatch(/-v, --verbose/);
    expect(run.stdout).toMatch(/-q, --quiet/);
    expect(run.stdout).toMatch(/-h, --help/);
  });
});

describe('usage errors', () => {
  it('an unknown command is named, with the command meant', async () => {
    const run = await runCli(['phots', 'export']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Unknown command "phots". Did you mean "photos"?');
    const nested = await runCli(['photos', 'exprot']);
    expect(nested.code).toBe(2);
    expect(nested.stderr).toContain('Unknown command "exprot". Did you mean "export"?');
  });

  it('an unknown option is named, with the option meant', async () => {
    const run = await runCli(['photos', 'export', '-o', join(tempDir(), 'x'), '--concurency', '3']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Unknown option "--concurency". Did you mean "--concurrency"?');
  });

  it('a number option that is not a number names its rule and the word typed', async () => {
    const run = await runCli(['photos', 'export', '-o', join(tempDir(), 'x'), '--concurrency', 'abc']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--concurrency must be a whole number from 1 to 256, got "abc"');
    expect(run.stderr).not.toContain('NaN');
    const range = await runCli(['photos', 'export', '-o', join(tempDir(), 'x'), '--concurrency=0']);
    expect(range.code).toBe(2);
    expect(range.stderr).toContain('--concurrency must be a whole number from 1 to 256, got "0"');
    const port = await runCli(['emulator', '--port', '80x']);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('--port must be a whole number from 0 to 65535, got "80x"');
  });

  it('prints no colour codes when stderr is a pipe', async () => {
    const run = await runCli(['phots']);
    expect(run.stderr).toContain('Unknown command');
    expect(run.stderr).not.toContain('\u001b[');
  });
});

describe('completion', () => {
  it('prints a bash script that completes commands through the CLI', async () => {
    const run = await runCli(['completion']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('complete -o bashdefault -o default -F _wds-files_yargs_completions wds-files');
    // The script calls `wds-files`: a wrapper on PATH runs this checkout's CLI.
    const bin = tempDir('wds-bin-');
    writeFileSync(join(bin, 'wds-files'), `#!/bin/sh\ncd "${ROOT}" && exec "${process.execPath}" "${CLI_MAIN}" "$@"\n`);
    chmodSync(join(bin, 'wds-files'), 0o755);
    writeFileSync(join(bin, 'completion.sh'), run.stdout);
    const complete = (words: string): string => execFileSync('bash', ['-c', `source completion.sh; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _wds-files_yargs_completions; echo "\${COMPREPLY[*]}"`], {
      cwd: bin, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8',
    }).trim();
    expect(complete('wds-files pho')).toBe('photos');
    expect(complete('wds-files photos ex').split(' ')).toEqual(['export']);
  });
});

describe('verbose, quiet and the log file', () => {
  const emu = useEmulator({ seed: 'samples/company', maintenance: false });
  let proxy: RecordingProxy;
  beforeAll(async () => {
    proxy = await startRecordingProxy(emu().url);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('-v puts one line per request on stderr, --log-file writes JSON lines, and neither names a secret or token', async () => {
    const log = join(tempDir('wds-log-'), 'run.jsonl');
    proxy.requests.length = 0;
    const run = await runCli(['photos', 'export', '-o', join(tempDir(), 'out'), '-v', '--log-file', log, '--base-url', proxy.url, '--consumer-key', KEY, '--consumer-secret', SECRET]);
    expect(run.code, run.stderr).toBe(0);
    const api = proxy.requests.filter((r) => r.url.startsWith('/api/'));
    expect(api.length).toBeGreaterThanOrEqual(2);
    for (const r of api) expect(run.stderr).toMatch(new RegExp(`^${r.method} ${r.url.split('?')[0]!.replace(/[.]/g, '\\.')} ${r.status} \\d+ ms$`, 'm'));

    // Downloads too, by path: the signed URL's query (its key) is never shown.
    expect(run.stderr).toMatch(/^GET \/storage\/\S+\.\w+ 200 \d+ ms$/m);
    expect(run.stderr).not.toMatch(/Expires=|Signature=|\?/);
    expect(readFileSync(log, 'utf8')).not.toMatch(/Expires=|Signature=/);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    const entries = lines.map((line) => JSON.parse(line) as { level: number; time: string; msg: string });
    for (const e of entries) {
      expect(typeof e.level).toBe('number');
      expect(Number.isNaN(Date.parse(e.time))).toBe(false);
    }
    // Debug (20) request lines, whatever stderr showed.
    expect(entries.some((e) => e.level === 20 && /^GET \/api\/v2\.0\/members\/face_image 200 \d+ ms$/.test(e.msg))).toBe(true);

    const tokens = [...new Set(proxy.requests.map((r) => r.headers['service-token']).filter((t): t is string => typeof t === 'string'))];
    expect(tokens.length).toBeGreaterThan(0);
    const text = readFileSync(log, 'utf8');
    for (const secret of [SECRET, ...tokens]) {
      expect(run.stderr).not.toContain(secret);
      expect(text).not.toContain(secret);
    }
  });

  it('-vv gives each line its time', async () => {
    const run = await runCli(['photos', 'export', '-vv', '-o', join(tempDir(), 'out'), '--base-url', proxy.url, '--consumer-key', KEY, '--consumer-secret', SECRET]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z GET \/api\/v2\.0\/members\/face_image 200 \d+ ms$/m);
  });

  it('without -v there is no request line; -q leaves stderr empty; verify takes --quiet', async () => {
    const out = join(tempDir(), 'out');
    const plain = await runCli(['photos', 'export', '-o', out, '--base-url', proxy.url, '--consumer-key', KEY, '--consumer-secret', SECRET]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stderr).not.toMatch(/^GET \/api/m);
    const quiet = await runCli(['photos', 'export', '-q', '-o', join(tempDir(), 'out2'), '--base-url', proxy.url, '--consumer-key', KEY, '--consumer-secret', SECRET]);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
    const verify = await runCli(['verify', '--quiet', out]);
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/verify .*: (\d+) of \1 files match the manifest/);
  });
});
