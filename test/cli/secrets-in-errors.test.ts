/**
 * Secrets typed into the command line or a pipeline file never come back in a message, while the
 * message still says what is wrong: a notify URL with a password, a token in its path or query;
 * a --data body that is not JSON; a --base-url with a password; and a consumer secret next to a
 * mistake yargs reports. Each runs the built CLI as a child process and searches stdout, stderr
 * and the report for every secret.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { runCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { redactUrl } from '../../src/util/redact.js';
import { jsonProblem } from '../../src/util/json-problem.js';

// CLI children on a machine shared by four test files at once: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;

function expectNone(run: CliRun, secrets: string[], ...files: string[]): void {
  const texts = [run.stdout, run.stderr, ...files.filter((f) => existsSync(f)).map((f) => readFileSync(f, 'utf8'))];
  for (const text of texts) for (const secret of secrets) expect(text).not.toContain(secret);
}

describe('a notify URL with a password, a token in its path and one in its query', { timeout: CHILD_TIMEOUT_MS }, () => {
  const KEY = 'notify-key';
  const SECRET = 'notify-consumer-secret-2f4e';
  const emu = useEmulator({ maintenance: false, consumerKey: KEY, consumerSecret: SECRET });
  const USER = 'hook-user';
  const PASSWORD = 'hook-pass-5e1d';
  const PATH_TOKEN = 'hookpathsecret9';
  const QUERY_TOKEN = 'hookquerysecret7';
  const HIDDEN = [PASSWORD, PATH_TOKEN, QUERY_TOKEN, USER, 'consumer-secret-2f4e'];
  const received: { path: string; headers: IncomingHttpHeaders }[] = [];
  let receiver: Server;
  let port: number;

  beforeAll(async () => {
    // /ok/... answers 204 to the right Basic credentials only; /fail/... answers 500.
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers });
        const authorized = req.headers.authorization === `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
        res.writeHead(req.url?.startsWith('/ok/') ? (authorized ? 204 : 401) : 500).end();
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((done) => receiver.close(done));
  });

  const hookUrl = (host: string, kind: string): string => `http://${USER}:${PASSWORD}@${host}/${kind}/T0123/${PATH_TOKEN}?token=${QUERY_TOKEN}&channel=ops`;

  /** A pipeline whose run fails at once (a wrong consumer secret in the environment) and notifies the failure. */
  function pipeline(url: string): { file: string; report: string } {
    const dir = tempDir('wds-secrets-notify-');
    const file = join(dir, 'pipeline.yaml');
    writeFileSync(file, ['name: hook-secrets', 'from: { service: photos }', 'to: { folder: out }', `notify: { url: "${url}", on: [failure] }`,
      'connection:', `  base_url: ${emu().url}`, `  consumer_key: ${KEY}`, '  consumer_secret: ${TEST_SECRET}', ''].join('\n'));
    return { file, report: join(dir, 'report.json') };
  }
  const run = (p: { file: string; report: string }): Promise<CliRun> => runCli(['run', p.file, '--report', p.report], { TEST_SECRET: 'wrong-consumer-secret-2f4e' });

  it('validate takes it and prints none of it', async () => {
    const result = await runCli(['validate', pipeline(hookUrl(`127.0.0.1:${port}`, 'ok')).file], { TEST_SECRET: SECRET });
    expect(result.code, result.stderr).toBe(0);
    expectNone(result, HIDDEN);
  });

  it('is delivered with the user and password as Basic authorization, to the path and query as written', async () => {
    const p = pipeline(hookUrl(`127.0.0.1:${port}`, 'ok'));
    const before = received.length;
    const result = await run(p);
    expect(result.code, result.stderr).toBe(1);
    expect(received.length).toBe(before + 1);
    expect(received.at(-1)!.path).toBe(`/ok/T0123/${PATH_TOKEN}?token=${QUERY_TOKEN}&channel=ops`);
    expect(result.stderr).not.toContain('notification');
    expectNone(result, HIDDEN, p.report);
  });

  it('a receiver that refuses it, or cannot be reached, is named by scheme and host alone', async () => {
    const refused = pipeline(hookUrl(`127.0.0.1:${port}`, 'fail'));
    const answered = await run(refused);
    expect(answered.code, answered.stderr).toBe(1);
    expect(answered.stderr).toContain(`hook-secrets: the notification to http://***@127.0.0.1:${port} was answered 500; the run's outcome stands`);
    expectNone(answered, HIDDEN, refused.report);

    // Port 9 (discard) has no listener here: the delivery fails before any answer.
    const down = pipeline(hookUrl('127.0.0.1:9', 'hooks'));
    const unsent = await run(down);
    expect(unsent.code, unsent.stderr).toBe(1);
    expect(unsent.stderr).toContain('hook-secrets: the notification to http://***@127.0.0.1:9 could not be sent (');
    expectNone(unsent, HIDDEN, down.report);
  });
});

describe('--data that is not JSON', { timeout: CHILD_TIMEOUT_MS }, () => {
  const PASSWORD = 'hunter2-data-secret';

  it('api and legacy api say where and which rule, not the text', async () => {
    const body = `{"users": [{"code": "A0001", "password": ${PASSWORD}}]}`;
    for (const args of [['api', 'POST', '/webhook'], ['legacy', 'api', '/user/add']]) {
      const result = await runCli([...args, '--data', body]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain('--data is not valid JSON: line 1, column 42: expected a value: a string in double quotes');
      expectNone(result, [PASSWORD, 'hunter2']);
    }
    const lines = await runCli(['api', 'POST', '/webhook', '--data', `{\n  "url": "https://x.example",\n  'secret_token': '${PASSWORD}'\n}`]);
    expect(lines.code, lines.stderr).toBe(2);
    expect(lines.stderr).toContain('--data is not valid JSON: line 3, column 3: expected a property name in double quotes');
    expectNone(lines, [PASSWORD]);
  });

  it('legacy api says which kind of value a body that is no object is', async () => {
    const result = await runCli(['legacy', 'api', '/user/add', '--data', JSON.stringify([PASSWORD])]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`--data must be a JSON object, such as '{"users": [...]}', got an array`);
    expectNone(result, [PASSWORD]);
  });
});

describe('a base URL with a password', { timeout: CHILD_TIMEOUT_MS }, () => {
  const PASSWORD = 'base-pass-61c0';
  const credentials = ['--consumer-key', 'some-key', '--consumer-secret', 'some-consumer-secret'];

  it('is a usage error (exit 2) naming the setting and the address with its user part masked', async () => {
    const cases: [string[], NodeJS.ProcessEnv, string][] = [
      [['--base-url', `http://wds-user:${PASSWORD}@127.0.0.1:8787/?token=${PASSWORD}`], {}, '--base-url must not carry a user name or password (the service signs in with the consumer key and secret only), got "http://***@127.0.0.1:8787/?token=***"'],
      [[`--base-url=http://wds-user:${PASSWORD}@127.0.0.1:99999`], {}, '--base-url must be an http(s) URL such as https://example.com, got "http://***@127.0.0.1:99999"'],
      // A `/` in the password: no URL at all, and still nothing of the user part is shown.
      [['--base-url', `http://wds-user:base/${PASSWORD}@127.0.0.1:8787`], {}, '--base-url must be an http(s) URL such as https://example.com, got "http://***@127.0.0.1:8787"'],
      [[], { WDS_BASE_URL: `https://wds-user:${PASSWORD}@wds.example` }, 'WDS_BASE_URL must not carry a user name or password'],
    ];
    for (const [args, env, message] of cases) {
      for (const command of [['api', 'GET', '/members'], ['legacy', 'api', '/user']]) {
        const result = await runCli([...command, ...args, ...credentials], env);
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toContain(message);
        expectNone(result, [PASSWORD, 'wds-user']);
      }
    }
  });
});

describe('a consumer secret next to a usage error', { timeout: CHILD_TIMEOUT_MS }, () => {
  const SECRET = 'plain-secret-8d2e';

  it('is never quoted: a secret that looks like an option, a stray word, an unknown option beside it', async () => {
    for (const word of [`--${SECRET}`, `-${SECRET}`]) {
      const result = await runCli(['api', 'GET', '/members', '--consumer-secret', word]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain('--consumer-secret needs a value, and the word after it starts with "-". A secret that starts with "-" is written --consumer-secret=VALUE');
      expectNone(result, [SECRET]);
    }
    const cases: [string[], string][] = [
      [['api', 'GET', '/members', '--no-consumer-secret', SECRET], 'Unexpected argument'],
      [['photos', 'export', '--out', join(tempDir(), 'out'), '--consumer-secret', SECRET, '--bogus'], 'Unknown option "--bogus"'],
      [['photos', 'export', '--out', join(tempDir(), 'out'), `--consumer-secret=${SECRET}`, SECRET], 'Unexpected argument'],
      [['verify', tempDir(), '--consumer-secret', SECRET], 'Unknown option "--consumer-secret"'],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(message);
      expectNone(result, [SECRET]);
    }
  });
});

/** The helpers themselves, for the breadth of what they mask and say. */
describe('redactUrl and jsonProblem', () => {
  it('redactUrl masks the user part and the query values, and with path: hide shows scheme and host alone', () => {
    expect(redactUrl('https://u:p@s@hooks.example/a/b?token=t&x=1#f')).toBe('https://***@hooks.example/a/b?token=***&x=***');
    expect(redactUrl('https://hooks.example/a/b?token=t', { path: 'hide' })).toBe('https://hooks.example');
    expect(redactUrl('u:secret@host')).toBe('***@host');
    expect(redactUrl('http://127.0.0.1:8787')).toBe('http://127.0.0.1:8787/');
  });

  it('jsonProblem names the line, the column and the rule, and nothing for JSON', () => {
    expect(jsonProblem('{"a": 1,}')).toBe('line 1, column 9: a comma is not allowed before }');
    expect(jsonProblem('[1 2]')).toBe('line 1, column 4: expected , or ] after an element');
    expect(jsonProblem('"a\\x"')).toMatch(/^line 1, column 3: an escape in a string must be one of/);
    expect(jsonProblem('{"a": 01}')).toBe('line 1, column 8: a number does not start with 0 unless it is 0 or 0.something');
    expect(jsonProblem('{"a": "b"')).toBe('line 1, column 10: the text ends early; expected , or } after a property value');
    expect(jsonProblem('')).toBe('the text is empty');
    expect(jsonProblem('{"a": [1, -2.5e3, true, null, "\\u00e9"]}')).toBeNull();
  });
});
