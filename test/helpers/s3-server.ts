/**
 * One real S3 server (Ceph's radosgw on loopback, test/helpers/s3-server.sh) for a whole test run:
 * the first test file that asks starts it (about 13 s), the others of the run, in any worker, find
 * its endpoint in the run's temporary folder, and test/global-setup.ts stops it as the run ends.
 * Each test makes its own bucket. Where radosgw is not installed, `s3Server` answers null and says
 * why on stderr; the tests that need it are skipped, never passed silently.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

export const S3_SCRIPT = join(import.meta.dirname, 's3-server.sh');
export const ACCESS_KEY = 'TESTKEY';
export const SECRET_KEY = 'TESTSECRET';

export interface S3Server {
  endpoint: string;
  /** The environment a CLI child process reaches the server with (the AWS SDK's own variables). */
  env: Record<string, string>;
}

/** The server's folder for this run: under the run's temporary folder (test/global-setup.ts). */
export const s3ServerDir = (): string => join(tmpdir(), 'wds-s3-server');

/** Why the server cannot run here, or null. */
function missing(): string | null {
  const path = (process.env.PATH ?? '').split(':');
  const absent = ['radosgw', 'ceph-mon', 'ceph-osd', 'uuidgen'].filter((tool) => !path.some((dir) => existsSync(join(dir, tool))));
  return absent.length ? `${absent.join(', ')} not installed (apt-get install -y ceph-mon ceph-osd radosgw uuid-runtime)` : null;
}

async function freePort(): Promise<number> {
  const free = (port: number) => new Promise<boolean>((resolve) => {
    const server = createServer().once('error', () => resolve(false)).listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
  for (;;) {
    // The monitor listens 30,000 above the gateway (s3-server.sh).
    const port = 10_000 + Math.floor(Math.random() * 20_000);
    if (await free(port) && await free(port + 30_000) && await free(port + 30_001)) return port;
  }
}

let found: Promise<S3Server | null> | undefined;

/** The run's S3 server, started by the first caller; null (said once on stderr) where it cannot run. */
export function s3Server(): Promise<S3Server | null> {
  found ??= startOrFind();
  return found;
}

async function startOrFind(): Promise<S3Server | null> {
  const why = missing();
  if (why) {
    process.stderr.write(`S3 tests skipped: ${why}\n`);
    return null;
  }
  const dir = s3ServerDir();
  const answer = join(dir, 'endpoint.json');
  let starter = true;
  try {
    await mkdir(dir);
  } catch {
    starter = false;
  }
  if (starter) {
    const port = await freePort();
    const result = await new Promise<{ endpoint?: string; error?: string }>((resolve) => {
      execFile('bash', [S3_SCRIPT, 'start', join(dir, 'ceph'), String(port)], { timeout: 180_000 }, (error, stdout, stderr) => {
        resolve(error ? { error: `${error.message}\n${stderr}` } : { endpoint: stdout.trim().split('\n').at(-1)! });
      });
    });
    await writeFile(answer, JSON.stringify(result));
  }
  const until = Date.now() + 240_000;
  for (;;) {
    const text = await readFile(answer, 'utf8').catch(() => null);
    if (text) {
      const result = JSON.parse(text) as { endpoint?: string; error?: string };
      if (!result.endpoint) throw new Error(`the S3 server did not start: ${result.error}`);
      return {
        endpoint: result.endpoint,
        env: { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_ENDPOINT_URL_S3: result.endpoint, AWS_REGION: 'us-east-1' },
      };
    }
    if (Date.now() > until) throw new Error(`no S3 server endpoint in ${answer} after 240 s`);
    await sleep(250);
  }
}

/** A client of the server, for tests that look at or change objects behind the CLI's back. */
export function s3Client(server: S3Server): S3Client {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  return new S3Client({ endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
}

/** A new bucket of its own for one test; with `objectLock`, made with S3 Object Lock enabled (hence versioned). */
export async function newBucket(server: S3Server, objectLock = false): Promise<string> {
  const name = `t-${randomBytes(6).toString('hex')}`;
  const client = s3Client(server);
  try {
    await client.send(new CreateBucketCommand({ Bucket: name, ...(objectLock ? { ObjectLockEnabledForBucket: true } : {}) }));
  } finally {
    client.destroy();
  }
  return name;
}
