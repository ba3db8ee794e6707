/**
 * A base URL that points at the wrong place is said as such: a wrong path prefix (a 404 on the
 * token's path, or a 404 that is not the service's JSON error) is "the base URL looks wrong", not
 * "no such id"; a redirect is named with its Location and not followed (the token would go
 * there); https:// to an http server is said at once. A web server (`python3 -m http.server`, an
 * HTML 404 page, a JSON answer that is no token) is the wrong base URL, named without its page;
 * a refused connection where nothing ever answered is said at once with a hint. The SDK, and the
 * CLI as a user runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { clientFor, tempStateFile } from '../helpers/client.js';
import { runCli } from '../helpers/cli-process.js';
import { LegacyClient, NotFoundError, RedirectError, WrongBaseUrlError } from '../../src/index.js';

const CHILD_TIMEOUT_MS = 90_000;
const emu = useEmulator();
const servers: Server[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) child.kill();
  await Promise.all(servers.map((s) => new Promise((done) => s.close(done))));
});

/** `python3 -m http.server` on a free port, serving a folder that holds an index.html; its URL. */
async function pythonWebServer(): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'wds-www-'));
  writeFileSync(join(root, 'index.html'), '<!DOCTYPE html>\n<html><head><title>My site</title></head><body><h1>Welcome to my site</h1></body></html>\n');
  const child = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', root], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let said = '';
  const port = await new Promise<string>((done, fail) => {
    child.on('exit', (code) => fail(new Error(`python3 -m http.server ended (${code}): ${said}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const found = / port (\d+)/.exec(said);
      if (found) done(found[1]!);
    });
  });
  return `http://127.0.0.1:${port}`;
}

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler!);
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** A gateway that routes the token's path to the emulator and answers an HTML 404 for everything else. */
async function gatewayWithoutRoutes(): Promise<string> {
  return serve(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.url === '/api/v2.0/token') {
      const answer = await fetch(`${emu().url}${req.url}`, {
        method: 'POST',
        headers: { Authorization: String(req.headers.authorization), 'Content-Type': String(req.headers['content-type']) },
        body: Buffer.concat(chunks),
      });
      res.writeHead(answer.status, { 'Content-Type': answer.headers.get('content-type') ?? 'application/json' });
      res.end(await answer.text());
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/html' });
    res.end('<html><body><h1>404 Not Found</h1></body></html>');
  });
}

const cli = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => runCli(['api', ...args, '--consumer-key', KEY, '--consumer-secret', SECRET]);

describe('the SDK', () => {
  it('a wrong path prefix: the token\'s 404 says the base URL looks wrong', async () => {
    const client = clientFor(emu(), { baseUrl: `${emu().url}/wrongprefix` });
    const error = await client.faceImages.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WrongBaseUrlError);
    expect(error).toMatchObject({ code: 'WRONG_BASE_URL', status: 404, baseUrl: `${emu().url}/wrongprefix` });
    expect((error as Error).message).toContain(`the base URL ${emu().url}/wrongprefix looks wrong`);
    expect((error as Error).message).not.toContain('no such id');
    await client.close();

    // The legacy interface's token path, likewise.
    const legacy = new LegacyClient({ baseUrl: `${emu().url}/wrongprefix`, consumerKey: KEY, consumerSecret: SECRET, stateFile: tempStateFile() });
    await expect(legacy.departments.list()).rejects.toBeInstanceOf(WrongBaseUrlError);
    await legacy.close();
  });

  it('a 404 without the service\'s JSON error is the base URL; the service\'s own 404 stays "no such id"', async () => {
    const client = clientFor(emu(), { baseUrl: await gatewayWithoutRoutes() });
    const error = await client.sheets.get(2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WrongBaseUrlError);
    expect((error as Error).message).toContain("without the service's JSON error");
    await client.close();

    const direct = clientFor(emu());
    await expect(direct.sheets.get(999)).rejects.toBeInstanceOf(NotFoundError);
    await direct.close();
  });

  it('a redirect is named with its Location and not followed', async () => {
    const target = emu().url;
    const redirecting = await serve((req, res) => {
      req.resume();
      res.writeHead(308, { Location: `${target}${req.url}` });
      res.end();
    });
    const before = (await emu().control('GET', '/stats')).tokens_issued as number;
    const client = clientFor(emu(), { baseUrl: redirecting });
    const error = await client.faceImages.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedirectError);
    expect(error).toMatchObject({ code: 'REDIRECT', status: 308, location: `${target}/api/v2.0/token` });
    expect((error as Error).message).toContain(`redirected to ${target}/api/v2.0/token`);
    expect((error as Error).message).toContain(`use the base URL ${target}`);
    await client.close();
    // Not followed: the credentials never reached the emulator.
    expect((await emu().control('GET', '/stats')).tokens_issued).toBe(before);
  });
});

describe('the CLI', () => {
  it('--base-url with a wrong prefix: exit 1, the base URL looks wrong', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const run = await cli(['GET', '/members', '--base-url', `${emu().url}/wrongprefix`]);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`the base URL ${emu().url}/wrongprefix looks wrong`);
    expect(run.stderr).toContain('[WRONG_BASE_URL]');
    expect(run.stderr).not.toContain('no such id');
  });

  it('a 307 to elsewhere: exit 1, the redirect and its Location, not BAD_REQUEST', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const redirecting = await serve((req, res) => {
      req.resume();
      res.writeHead(307, { Location: 'https://elsewhere.invalid/login' });
      res.end();
    });
    const run = await cli(['GET', '/members', '--base-url', redirecting]);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('redirected to https://elsewhere.invalid/login (307)');
    expect(run.stderr).toContain('[REDIRECT]');
    expect(run.stderr).not.toContain('BAD_REQUEST');
  });

  it('a base URL served by python3 -m http.server: a message naming the base URL, no HTML', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const site = await pythonWebServer();
    // Its index answers a GET; the token's POST gets its 501 page.
    expect(await (await fetch(site)).text()).toContain('Welcome to my site');
    for (const args of [['api', 'GET', '/members'], ['photos', 'export', '--out', join(mkdtempSync(join(tmpdir(), 'wds-www-out-')), 'photos')], ['legacy', 'api', '/department']]) {
      const run = await runCli([...args, '--base-url', site, '--consumer-key', KEY, '--consumer-secret', SECRET, '-q']);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain(`the base URL ${site} looks wrong`);
      expect(run.stderr).toContain('[WRONG_BASE_URL]');
      expect(run.stderr).toContain('an HTML page');
      expect(run.stderr).not.toMatch(/<\/?(?:html|head|body|h1|p)\b|DOCTYPE/i);
    }
  });

  it('an HTML 404 page, an HTML page for every path, and JSON that is no token: the base URL looks wrong, no page', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const page = `<!DOCTYPE html><html><head><title>Not here</title></head><body>${'<p>filler</p>'.repeat(200)}</body></html>`;
    const notFound = await serve((req, res) => {
      req.resume();
      res.writeHead(404, { 'Content-Type': 'text/html' });
      res.end(page);
    });
    // A single-page app answers its page, 200, for any path.
    const everyPath = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(page);
    });
    const otherApi = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"status":"ok","version":"2.4.1"}');
    });
    for (const [site, said] of [[notFound, 'answered 404 with an HTML page ("Not here")'], [everyPath, 'answered 200 with an HTML page ("Not here")'], [otherApi, 'answered JSON that holds no access_token instead of a token']] as const) {
      const run = await cli(['GET', '/members', '--base-url', site]);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain(`the base URL ${site} looks wrong`);
      expect(run.stderr).toContain(said);
      expect(run.stderr).not.toMatch(/filler|<html/);
    }
  });

  it('a refused connection where nothing ever answered: said at once with a hint, not retried', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const server = createNetServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as { port: number };
    await new Promise((done) => server.close(done));
    const started = Date.now();
    const run = await cli(['GET', '/members', '--base-url', `http://127.0.0.1:${port}`]);
    const seconds = (Date.now() - started) / 1000;
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`connection refused by 127.0.0.1:${port}`);
    expect(run.stderr).toContain(`check the base URL http://127.0.0.1:${port} and that the service is up`);
    // Each retry would be a wait line first (the client's backoff took 11 s in all).
    expect(run.stderr).not.toMatch(/retrying/);
    // The child's start-up included: on a loaded machine it alone can take seconds.
    expect(seconds).toBeLessThan(30);
  });

  it('https:// to the emulator, which speaks http: said at once, no OpenSSL text', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const run = await cli(['GET', '/members', '--base-url', emu().url.replace(/^http:/, 'https:')]);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('https:// to a server that speaks http?');
    // Each retry would say "retrying in N ms" on stderr first.
    expect(run.stderr).not.toMatch(/SSL routines|retrying/);
  });
});
