/**
 * The bucket archive's benchmark (`npx tsx bench/archive.ts --store s3`, issue 43): the shipped CLI
 * (`node dist/cli/main.js run PIPELINE --json`) archiving one generated company into an S3 bucket
 * and, beside it, into a folder archive: a full run, an unchanged run and a run after 1 % of the
 * files changed, each into both. Then `restic backup` of the same files from local disk into the
 * same S3 server (Debian's restic; skipped, saying so, where it is not installed), full,
 * unchanged and 1 %. The S3 server is a real one on loopback (Ceph's radosgw,
 * test/helpers/s3-server.sh), reached through a counting proxy in this process that sorts every
 * request by kind (GET, PUT, HEAD, LIST, DELETE, RETENTION, POST); the emulator's storage answers
 * after `--latency` ms. Each run prints its wall time, storage downloads, S3 requests by kind,
 * what it added to the bucket (or folder), the peak RSS of the measured process (bench/max-rss.ts)
 * and the load average as it ended (the machine may be shared). Then the targets.
 *
 *   npx tsx bench/archive.ts --store s3                     20,000 attachments of 3 to 60 KB
 *   npx tsx bench/archive.ts --store s3 --files 500 --no-build   a quick check that it runs
 *   npx tsx bench/archive.ts --store s3 --latency 0         storage answering at once (default 20 ms)
 *   npx tsx bench/archive.ts --store s3 --no-restic         without restic's runs
 *
 * The files are smaller than bench/archive's own (10 KB to 1 MB): the S3 server keeps every
 * object in memory (memstore), and holds both our objects and restic's packs.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, unlink, writeFile, copyFile, mkdir } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as netServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET, type RunningEmulator } from '../src/emulator/index.js';
import type { StoredFile } from '../src/emulator/model.js';
import { measure, type Measured } from './max-rss.js';
import { CLI, ROOT, ensureBuilt } from './shipped-cli.js';
import { removeTree } from '../src/util/remove-tree.js';

const run = promisify(execFile);
const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const flag = (name: string): boolean => process.argv.includes(`--${name}`);

const FILES = Number(argValue('files') ?? 20_000);
const LATENCY_MS = Number(argValue('latency') ?? 20);
if (!Number.isInteger(FILES) || FILES < 2) throw new Error(`--files must be a whole number of 2 or more, got ${argValue('files')}`);
if (!(LATENCY_MS >= 0)) throw new Error(`--latency must be a number of milliseconds, got ${argValue('latency')}`);

const S3_SCRIPT = join(ROOT, 'test', 'helpers', 's3-server.sh');
const ACCESS = { AWS_ACCESS_KEY_ID: 'TESTKEY', AWS_SECRET_ACCESS_KEY: 'TESTSECRET', AWS_REGION: 'us-east-1' };
const BUCKET = 'bench';
const PREFIX = 'acme/attachments';

type Kind = 'GET' | 'PUT' | 'HEAD' | 'LIST' | 'DELETE' | 'RETENTION' | 'POST';
const KINDS: Kind[] = ['GET', 'PUT', 'HEAD', 'LIST', 'DELETE', 'RETENTION', 'POST'];

/** What an S3 request is, from its method and query: the kinds S3 bills apart. */
function kindOf(req: IncomingMessage): Kind {
  const query = new URL(req.url ?? '/', 'http://x').searchParams;
  const method = req.method ?? 'GET';
  if (method === 'HEAD') return 'HEAD';
  if (method === 'DELETE') return 'DELETE';
  if (method === 'POST') return query.has('delete') ? 'DELETE' : 'POST';
  if (method === 'PUT') return query.has('retention') ? 'RETENTION' : 'PUT';
  // A GET of the bucket itself (the path has no key) is a listing, of objects or of versions.
  const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/+/, '');
  return !path.includes('/') || path.endsWith('/') && (query.has('list-type') || query.has('prefix') || query.has('versions')) ? 'LIST' : 'GET';
}

/** A proxy on loopback in front of the S3 server that counts what passes: requests by kind, and bytes sent up. */
class CountingProxy {
  counts = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
  uploaded = 0;
  private server!: Server;
  port = 0;

  constructor(private readonly upstream: URL) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.forward(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  reset(): void {
    for (const k of KINDS) this.counts[k] = 0;
    this.uploaded = 0;
  }

  get total(): number {
    return KINDS.reduce((t, k) => t + this.counts[k], 0);
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    this.counts[kindOf(req)] += 1;
    // The request goes on as signed: the Host header the client signed is passed through unchanged.
    const out = httpRequest({ host: this.upstream.hostname, port: this.upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(error));
    });
    req.on('data', (chunk: Buffer) => (this.uploaded += chunk.length));
    req.pipe(out);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function freePort(): Promise<number> {
  const free = (port: number) => new Promise<boolean>((resolve) => {
    const server = netServer().once('error', () => resolve(false)).listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
  for (;;) {
    // The monitor listens 30,000 above the gateway (s3-server.sh).
    const port = 10_000 + Math.floor(Math.random() * 20_000);
    if (await free(port) && await free(port + 30_000) && await free(port + 30_001)) return port;
  }
}

/** Why the S3 server cannot start here, or null. */
async function serverMissing(): Promise<string | null> {
  const absent: string[] = [];
  for (const tool of ['radosgw', 'ceph-mon', 'ceph-osd', 'uuidgen']) if (!(await run('sh', ['-c', `command -v ${tool}`]).then(() => true, () => false))) absent.push(tool);
  return absent.length ? `${absent.join(', ')} not installed (apt-get install -y ceph-mon ceph-osd radosgw uuid-runtime)` : null;
}

/** Every attachment of the generated company, with a way to give it new bytes of the same size. */
function filesOf(emu: RunningEmulator): { current: StoredFile; replace: (next: StoredFile) => void }[] {
  const company = emu.emulator.company()!;
  const out: { current: StoredFile; replace: (next: StoredFile) => void }[] = [];
  for (const sheet of Object.values(company.data.sheets)) {
    for (const records of Object.values(sheet.records)) {
      for (const record of records) for (const [field, file] of Object.entries(record.files)) out.push({ current: file, replace: (next) => (record.files[field] = next) });
    }
  }
  return out;
}

/** Changes `share` of the files, spread over the company: new bytes, a later updated_at. */
function changeShare(emu: RunningEmulator, share: number): number {
  const company = emu.emulator.company()!;
  emu.emulator.clock.advance(120);
  const files = filesOf(emu);
  const count = Math.max(1, Math.round(files.length * share));
  const step = files.length / count;
  for (let i = 0; i < count; i += 1) {
    const { current, replace } = files[Math.floor(i * step)]!;
    replace(company.storeFile(randomBytes(current.size), current.file_name, current));
  }
  return count;
}

/** Bytes and objects under `prefix` of the bucket. */
async function bucketUse(client: S3Client, prefix: string): Promise<{ bytes: number; objects: number }> {
  let bytes = 0;
  let objects = 0;
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      bytes += o.Size ?? 0;
      objects += 1;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return { bytes, objects };
}

/** `du -s -B1`: bytes of blocks under `dir`, each inode once; 0 when it is not there yet. */
async function du(dir: string): Promise<number> {
  return run('du', ['-s', '-B1', dir]).then(({ stdout }) => Number(stdout.split('\t')[0]), () => 0);
}

interface Row {
  store: 's3' | 'folder' | 'restic';
  name: 'full' | 'unchanged' | '1 %';
  measured: Measured;
  storage: number;
  requests: Record<Kind, number> & { total: number };
  /** Bytes the run added to the bucket (or, for the folder, on disk). */
  added: number;
  load: string;
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const loadNow = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

function show(row: Row): void {
  const r = row.requests;
  const kinds = row.store === 'folder' ? '' : `  S3 ${String(r.total).padStart(6)} (${KINDS.filter((k) => r[k] > 0).map((k) => `${k} ${r[k]}`).join(', ') || 'none'})`;
  console.log(`  ${row.store.padEnd(7)}${row.name.padEnd(10)}${seconds(row.measured.ms).padStart(9)}  storage ${String(row.storage).padStart(6)}${kinds}  adds ${mb(row.added)}  peak RSS ${(row.measured.maxRssKb / 1024).toFixed(0)} MB  cpu ${(row.measured.userS + row.measured.systemS).toFixed(1)} s  load ${row.load}`);
}

export async function benchS3(): Promise<void> {
  const missing = await serverMissing();
  if (missing) {
    console.log(`bench/archive --store s3: skipped, the S3 server cannot run here: ${missing}`);
    return;
  }
  const built = ensureBuilt(!flag('no-build'));
  const work = await mkdtemp(join(tmpdir(), 'wds-bench-s3-'));
  const cephDir = join(work, 'ceph');
  const port = await freePort();
  // Our objects and restic's packs both live in the server's memory: room for both, with margin.
  const started = await run('bash', [S3_SCRIPT, 'start', cephDir, String(port)], { env: { ...process.env, S3_MEMSTORE_BYTES: String(8 * 2 ** 30) }, timeout: 240_000 });
  const upstream = new URL(started.stdout.trim().split('\n').at(-1)!);
  const proxy = new CountingProxy(upstream);
  await proxy.start();
  const endpoint = `http://127.0.0.1:${proxy.port}`;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const s3 = new S3Client({ endpoint: upstream.origin, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: ACCESS.AWS_ACCESS_KEY_ID, secretAccessKey: ACCESS.AWS_SECRET_ACCESS_KEY } });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const emu = await startEmulator({
    port: 0, clockStart: '2026-04-01 10:00:00', maintenance: false,
    generate: { members: Math.ceil(FILES / 2), photo_ratio: 0, attachments_per_member: [2, 2], attachment_bytes: [3000, 60_000] },
  });
  emu.emulator.storageFaults.configure({ latency_ms: LATENCY_MS });
  const company = emu.emulator.company()!;
  try {
    const files = filesOf(emu);
    const total = files.reduce((t, f) => t + f.current.size, 0);
    console.log(`bench/archive --store s3: ${files.length} attachments (${mb(total)}, ${(total / files.length / 1000).toFixed(0)} KB on average); storage latency ${LATENCY_MS} ms; S3: radosgw on loopback (memstore); ${built}; load at start ${loadNow()}`);
    const connection = `connection: { base_url: "${emu.url}", consumer_key: ${DEFAULT_CONSUMER_KEY}, consumer_secret: ${DEFAULT_CONSUMER_SECRET} }`;
    const pipelines = {
      s3: join(work, 'bucket.yaml'),
      folder: join(work, 'folder.yaml'),
    };
    await writeFile(pipelines.s3, `name: bench-bucket\n${connection}\nfrom: { service: attachments }\nto: { archive: "s3://${BUCKET}/${PREFIX}", s3: { endpoint: "${endpoint}", force_path_style: true } }\n`);
    await writeFile(pipelines.folder, `name: bench-folder\n${connection}\nfrom: { service: attachments }\nto: { archive: ./archive }\n`);
    const env: NodeJS.ProcessEnv = { ...process.env, ...ACCESS, XDG_CACHE_HOME: join(work, 'cache'), XDG_STATE_HOME: join(work, 'state') };
    for (const name of ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET', 'AWS_ENDPOINT_URL_S3', 'AWS_PROFILE']) delete env[name];

    const ours = async (store: 's3' | 'folder', name: Row['name']): Promise<Row> => {
      const before = store === 's3' ? (await bucketUse(s3, `${PREFIX}/`)).bytes : await du(join(work, 'archive'));
      await run('sync');
      company.stats.reset();
      proxy.reset();
      const measured = await measure(process.execPath, [CLI, 'run', pipelines[store], '--json'], { env, cwd: work });
      const load = loadNow();
      if (measured.code !== 0) throw new Error(`${store} ${name}: the CLI exited with ${measured.code ?? `signal ${measured.signal}`}:\n${measured.stderr}${measured.stdout}`);
      const requests = { ...proxy.counts, total: proxy.total };
      const after = store === 's3' ? (await bucketUse(s3, `${PREFIX}/`)).bytes : await du(join(work, 'archive'));
      const stats = company.stats.toJSON() as { storage_downloads: number };
      const row: Row = { store, name, measured, storage: stats.storage_downloads, requests, added: after - before, load };
      show(row);
      return row;
    };

    // restic reads the files from local disk: a plain copy of the folder archive's latest snapshot,
    // changed in place as the service's files change (so restic sees only those as changed).
    const restic = flag('no-restic') ? null : await run('restic', ['version']).then(({ stdout }) => stdout.trim(), () => null);
    if (!restic) console.log(`  restic: skipped (${flag('no-restic') ? '--no-restic' : 'restic is not installed: apt-get install restic'})`);
    const plain = join(work, 'plain');
    const resticEnv = { ...env, RESTIC_REPOSITORY: `s3:${endpoint}/${BUCKET}/restic`, RESTIC_PASSWORD: 'bench-only' };
    const latestFiles = async (): Promise<Map<string, string>> => {
      const latest = (await readFile(join(work, 'archive', 'latest'), 'utf8')).trim();
      const dir = join(work, 'archive', 'snapshots', latest);
      const lines = (await readFile(join(dir, 'manifest.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { kind: string; path?: string; sha256?: string });
      return new Map(lines.filter((l) => l.kind !== 'source').map((l) => [l.path!, `${dir}\0${l.sha256}`]));
    };
    let mirrored = new Map<string, string>();
    const mirror = async (): Promise<void> => {
      const now = await latestFiles();
      for (const [path, at] of now) {
        const [dir, sha] = at.split('\0');
        if (mirrored.get(path)?.split('\0')[1] === sha) continue;
        await mkdir(dirname(join(plain, path)), { recursive: true });
        await rm(join(plain, path), { force: true });
        await copyFile(join(dir!, path), join(plain, path));
      }
      for (const path of mirrored.keys()) if (!now.has(path)) await unlink(join(plain, path)).catch(() => undefined);
      mirrored = now;
    };
    const resticRun = async (name: Row['name']): Promise<Row> => {
      const before = (await bucketUse(s3, 'restic/')).bytes;
      await run('sync');
      proxy.reset();
      const measured = await measure('restic', ['backup', '--quiet', '--host', 'bench', '.'], { env: resticEnv, cwd: plain });
      const load = loadNow();
      if (measured.code !== 0) throw new Error(`restic ${name}: exited with ${measured.code ?? `signal ${measured.signal}`}:\n${measured.stderr}${measured.stdout}`);
      const row: Row = { store: 'restic', name, measured, storage: 0, requests: { ...proxy.counts, total: proxy.total }, added: (await bucketUse(s3, 'restic/')).bytes - before, load };
      show(row);
      return row;
    };

    const rows: Row[] = [];
    rows.push(await ours('s3', 'full'), await ours('folder', 'full'));
    if (restic) {
      await cp(join(work, 'archive', 'snapshots', (await readFile(join(work, 'archive', 'latest'), 'utf8')).trim()), plain, { recursive: true });
      await rm(join(plain, 'manifest.jsonl'));
      await rm(join(plain, 'snapshot.json'));
      mirrored = await latestFiles();
      await run('restic', ['init', '--quiet'], { env: resticEnv });
      rows.push(await resticRun('full'));
    }
    rows.push(await ours('s3', 'unchanged'), await ours('folder', 'unchanged'));
    if (restic) rows.push(await resticRun('unchanged'));
    const changed = changeShare(emu, 0.01);
    console.log(`  (${changed} files changed)`);
    rows.push(await ours('s3', '1 %'), await ours('folder', '1 %'));
    if (restic) {
      await mirror();
      rows.push(await resticRun('1 %'));
    }
    targets(rows, changed);
  } finally {
    await emu.close();
    s3.destroy();
    await proxy.close();
    await run('bash', [S3_SCRIPT, 'stop', cephDir]).catch(() => undefined);
    if (flag('keep')) console.log(`kept ${work}`);
    else await removeTree(work);
  }
}

function targets(rows: Row[], changed: number): void {
  const get = (store: Row['store'], name: Row['name']): Row | undefined => rows.find((r) => r.store === store && r.name === name);
  const check = (ok: boolean, text: string): void => console.log(`${ok ? 'ok  ' : 'MISS'} ${text}`);
  const full = get('s3', 'full')!;
  const same = get('s3', 'unchanged')!;
  const one = get('s3', '1 %')!;
  const folderSame = get('folder', 'unchanged')!;
  console.log('targets:');
  check(same.requests.total <= 20, `s3 unchanged run: ${same.requests.total} S3 requests in all (target <= 20); ${same.storage} storage downloads, ${same.requests.PUT} PUTs`);
  check(same.measured.ms <= 1.5 * folderSame.measured.ms, `s3 unchanged run: ${seconds(same.measured.ms)}, ${(same.measured.ms / folderSame.measured.ms).toFixed(2)} x the folder archive's unchanged run (${seconds(folderSame.measured.ms)}; target <= 1.5)`);
  check(one.measured.ms <= 0.1 * full.measured.ms, `s3 1 % run: ${(one.measured.ms / full.measured.ms).toFixed(3)} x the full run's wall time (target <= 0.1); ${one.storage} storage downloads for ${changed} changed files`);
  const peak = Math.max(...rows.filter((r) => r.store === 's3').map((r) => r.measured.maxRssKb / 1024));
  check(peak <= 200, `s3 runs: peak RSS ${peak.toFixed(0)} MB at most (target <= 200 MB)`);
  const resticFull = get('restic', 'full');
  const resticSame = get('restic', 'unchanged');
  const resticOne = get('restic', '1 %');
  if (resticFull && resticSame && resticOne) {
    console.log(`beside restic backup: full ${(full.measured.ms / resticFull.measured.ms).toFixed(2)} x its wall time, ${(full.requests.total / resticFull.requests.total).toFixed(2)} x its requests, ${(full.added / resticFull.added).toFixed(2)} x its bytes stored; unchanged ${(same.measured.ms / resticSame.measured.ms).toFixed(2)} x its time, ${same.requests.total} against its ${resticSame.requests.total} requests; 1 % ${(one.measured.ms / resticOne.measured.ms).toFixed(2)} x its time, ${one.requests.total} against its ${resticOne.requests.total} requests`);
  }
}
