/**
 * The package as a user gets it: `npm pack` (whose prepack builds dist/) makes the tarball, and a
 * fresh project installs it. There, the installed CLI prints our version (not the project's), the
 * root and `wds-files/spec` load, and a strict NodeNext TypeScript file using the SDK and a
 * pipeline type-checks against the shipped declarations.
 *
 * The project installs offline from the npm cache that `npm ci` filled: its lockfile is made from
 * ours (our dependencies at the versions we test with, and @types/node, each with the tarball URL
 * it is cached under), because a plain `npm install --offline <tarball>` asks for registry
 * metadata that `npm ci` does not cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../helpers/cli-process.js';

const run = promisify(execFile);

/** Runs npm; a failure shows what npm and the build printed, not only that the command failed. */
async function npm(args: string[], cwd: string): Promise<void> {
  await run('npm', args, { cwd, maxBuffer: 16 * 1024 * 1024 }).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`npm ${args.join(' ')} failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  });
}
const ours = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };

interface LockEntry {
  version?: string;
  dev?: boolean;
  devOptional?: boolean;
  [key: string]: unknown;
}

/** Where the registry keeps a package's tarball (the URL the npm cache knows it by). */
function tarballUrl(registry: string, path: string, version: string): string {
  const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  return `${registry.replace(/\/?$/, '/')}${name}/-/${name.split('/').pop()}-${version}.tgz`;
}

/** A lockfile for a project whose one dependency is the tarball, with the packages of our own lockfile. */
function consumerLockfile(tarball: string, bytes: Buffer, registry: string): { manifest: object; lock: object } {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const root = lock.packages['']!;
  const typesNode = ours.devDependencies['@types/node']!;
  const dependencies = { 'wds-files': `file:${tarball}` };
  const devDependencies = { '@types/node': typesNode };
  const packages: Record<string, LockEntry> = {
    '': { name: 'consumer', version: '1.0.0', dependencies, devDependencies },
    'node_modules/wds-files': {
      version: ours.version,
      resolved: `file:${tarball}`,
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
      license: 'MIT',
      dependencies: root.dependencies,
      bin: root.bin,
      engines: root.engines,
    },
  };
  const located = (path: string, entry: LockEntry): LockEntry => ({ resolved: tarballUrl(registry, path, entry.version!), ...entry });
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path && !entry.dev && !entry.devOptional) packages[path] = located(path, entry);
  }
  for (const path of ['node_modules/@types/node', 'node_modules/undici-types']) packages[path] = { ...located(path, lock.packages[path]!), dev: true };
  const manifest = { name: 'consumer', version: '1.0.0', private: true, type: 'module', dependencies, devDependencies };
  return { manifest, lock: { name: 'consumer', version: '1.0.0', lockfileVersion: 3, requires: true, packages } };
}

/** What a user writes: strict, NodeNext, the SDK, a pipeline and the spec constants. */
const USER_CODE = `
import { WdsClient, runExport, type ExportResult, type FaceImageListEntry, type ListOptions } from 'wds-files';
import { MAX_FILE_BYTES, PHOTO_EXTENSIONS } from 'wds-files/spec';

export async function newestPhoto(client: WdsClient, options: ListOptions = {}): Promise<FaceImageListEntry | undefined> {
  const entries = await client.faceImages.list(options);
  return entries.sort((a, b) => a.updated_at.localeCompare(b.updated_at)).at(-1);
}

export async function exportPhotos(out: string): Promise<number> {
  const client = new WdsClient({ baseUrl: 'https://example.com', consumerKey: 'key', consumerSecret: 'secret', limits: { update: { limit: 5, windowMs: 60_000 } } });
  const result: ExportResult = await runExport({ client, what: 'photos', out, concurrency: 8 });
  await client.close();
  return result.report.counts.ok;
}

export const largest: number = MAX_FILE_BYTES;
export const kinds: readonly string[] = PHOTO_EXTENSIONS;

// Each of these must be an error: proof that the types are real, not any.
// @ts-expect-error exports are of photos or attachments only
export const wrong = (client: WdsClient) => runExport({ client, what: 'videos', out: 'x' });
// @ts-expect-error options are checked
export const typo = new WdsClient({ baseUrl: 'https://example.com', consumerKey: 'k', consumerSecret: 's', timeout: 5 });
// @ts-expect-error internal names are not exported from the root
export { apiErrorFor } from 'wds-files';
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    target: 'ES2022',
    lib: ['ES2023'],
    types: ['node'],
    skipLibCheck: false,
    noEmit: true,
  },
  files: ['user-code.ts'],
};

describe('the packed package, installed into another project', () => {
  let work: string;
  let tarball: string;
  let project: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'wds-pack-'));
    await npm(['pack', '--pack-destination', work], ROOT);
    tarball = join(work, readdirSync(work).find((name) => name.endsWith('.tgz'))!);
    project = join(work, 'project');
    mkdirSync(project);
    const registry = (await run('npm', ['config', 'get', 'registry'], { cwd: ROOT })).stdout.trim();
    const { manifest, lock } = consumerLockfile(tarball, readFileSync(tarball), registry);
    writeFileSync(join(project, 'package.json'), JSON.stringify(manifest, null, 2));
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(lock, null, 2));
    await npm(['ci', '--offline', '--no-audit', '--no-fund'], project);
  }, 240_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships the build, the sample company, the licence and the README, and no source maps or sources', async () => {
    const listed = (await run('tar', ['tzf', tarball])).stdout.split('\n');
    expect(listed).toContain('package/dist/index.js');
    expect(listed).toContain('package/dist/index.d.ts');
    expect(listed).toContain('package/dist/cli/main.js');
    expect(listed).toContain('package/samples/company/company.json');
    expect(listed).toContain('package/LICENSE');
    expect(listed).toContain('package/README.md');
    // The README links the service's rules; the generated API docs (docs/api) stay out.
    expect(listed).toContain('package/docs/service-rules.md');
    expect(listed.filter((name) => name.startsWith('package/docs/api/'))).toEqual([]);
    // The sample generator is a script of the repository: it imports src/, which is not shipped.
    expect(listed.filter((name) => name.startsWith('package/samples/') && name.endsWith('.ts'))).toEqual([]);
    expect(listed.filter((name) => name.endsWith('.map') || name.startsWith('package/src/'))).toEqual([]);
  });

  it('npx wds-files --version prints our version, not the project\'s', async () => {
    const { stdout } = await run('npx', ['wds-files', '--version'], { cwd: project });
    expect(stdout.trim()).toBe(ours.version);
    expect(ours.version).not.toBe('1.0.0');
  });

  it('the root and wds-files/spec load, without internal names', async () => {
    const script = `
      const root = await import('wds-files');
      const spec = await import('wds-files/spec');
      console.log(JSON.stringify({ root: Object.keys(root), limit: spec.MAX_FILE_BYTES }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project });
    const { root, limit } = JSON.parse(stdout) as { root: string[]; limit: number };
    expect(root).toEqual(expect.arrayContaining(['WdsClient', 'runExport', 'runPhotoImport', 'runAttachmentImport', 'verifyExport', 'openSource']));
    expect(root).not.toContain('apiErrorFor');
    expect(root).not.toContain('spec');
    expect(limit).toBe(5 * 1024 * 1024);
  });

  it('a strict NodeNext TypeScript file using WdsClient, FaceImageListEntry and runExport type-checks', async () => {
    writeFileSync(join(project, 'user-code.ts'), USER_CODE);
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', project], { cwd: project }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(checked).toBe('');
  }, 60_000);
});
