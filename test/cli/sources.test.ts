/**
 * Sources are explicit and recorded (issue 41): every manifest and snapshot.json records the
 * service's address and the company (a hash of its consumer key); a run with no base URL, or with
 * another company's credentials, into an existing export or archive exits 2 and changes nothing.
 * The real CLI as a child process, against an emulator of two companies.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../helpers/cli-process.js';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';

const dir = tempDir('wds-sources-');
const config = join(dir, 'companies.yaml');
writeFileSync(config, `companies:
  - name: alpha
    consumer_key: alpha-key
    consumer_secret: alpha-secret
    generate: { members: 12 }
    task_timing: { wait_ms: 10, run_ms: 10, per_item_ms: 0 }
  - name: beta
    consumer_key: beta-key
    consumer_secret: beta-secret
    generate: { members: 8 }
    task_timing: { wait_ms: 10, run_ms: 10, per_item_ms: 0 }
`);
const emu = useEmulator({ config });

const companyId = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 16);
const ALPHA = companyId('alpha-key');
const BETA = companyId('beta-key');
const alpha = (): string[] => ['--base-url', emu().url, '--consumer-key', 'alpha-key', '--consumer-secret', 'alpha-secret'];
const beta = (): string[] => ['--base-url', emu().url, '--consumer-key', 'beta-key', '--consumer-secret', 'beta-secret'];
const envOf = (key: string, secret: string): NodeJS.ProcessEnv => ({ WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: key, WDS_CONSUMER_SECRET: secret });
const TIMEOUT = 120_000;

/** Every file under `root` with the sha256 of its bytes: the target byte for byte. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(root, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    out[relative(root, path).split(sep).join('/')] = entry.isFile() ? createHash('sha256').update(readFileSync(path)).digest('hex') : entry.isDirectory() ? 'folder' : 'other';
  }
  return out;
}

const firstLine = (file: string): unknown => JSON.parse(readFileSync(file, 'utf8').split('\n')[0]!);

function expectOk(run: CliRun): void {
  expect(run.code, run.stderr).toBe(0);
}

/** A pipeline file archiving the company's attachments into `archive`, its connection from the environment. */
function archivePipeline(name: string, archive: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `name: ${name}\nfrom: { service: attachments }\nto: { archive: ${archive} }\nretention: { keep_last: 1 }\n`);
  return file;
}

describe('a run with no base URL', () => {
  it('into an existing export exits 2, says what to do, and changes nothing; into a new one it runs', { timeout: TIMEOUT }, async () => {
    const out = join(tempDir(), 'photos');
    expectOk(await runCli(['photos', 'export', '--out', out, ...alpha()]));
    const before = tree(out);

    const refused = await runCli(['photos', 'export', '--out', out]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`--out ${out} holds an export (its manifest.jsonl), and there is no --base-url or WDS_BASE_URL`);
    expect(refused.stderr).toContain('add --emulator');
    expect(tree(out)).toEqual(before);

    // A new target is a try of the sample company (as npm start and the README's first commands are).
    const fresh = join(tempDir(), 'sample');
    expectOk(await runCli(['photos', 'export', '--out', fresh]));
    expect(firstLine(join(fresh, 'manifest.jsonl'))).toMatchObject({ kind: 'source', company: companyId('demo-key') });
  });

  it('into an archive exits 2 and changes nothing: no snapshot, latest as it was, no retention', { timeout: TIMEOUT }, async () => {
    const archive = join(tempDir(), 'archive');
    const file = archivePipeline('nightly-alpha', archive);
    expectOk(await runCli(['run', file], envOf('alpha-key', 'alpha-secret')));
    const before = tree(archive);
    expect(Object.keys(before)).toContain('latest');

    const refused = await runCli(['run', file]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`to.archive ${archive} holds a snapshot archive, and there is no connection.base_url or WDS_BASE_URL`);
    expect(refused.stderr).toContain('add --emulator');
    expect(tree(archive)).toEqual(before);
  });
});

describe('a second company', () => {
  it("exporting into the first's folder or zip exits 2, names both companies, and changes nothing", { timeout: TIMEOUT }, async () => {
    const folder = join(tempDir(), 'photos');
    const zip = join(tempDir(), 'attachments.zip');
    expectOk(await runCli(['photos', 'export', '--out', folder, ...alpha()]));
    expectOk(await runCli(['attachments', 'export', '--out', zip, ...alpha()]));
    const address = new URL(emu().url).origin;
    expect(firstLine(join(folder, 'manifest.jsonl'))).toEqual({ kind: 'source', base_url: address, company: ALPHA });
    const folderBefore = tree(folder);
    const zipBefore = tree(join(zip, '..'));

    for (const [what, out, before, at] of [['photos', folder, folderBefore, folder], ['attachments', zip, zipBefore, join(zip, '..')]] as const) {
      const refused = await runCli([what, 'export', '--out', out, ...beta()]);
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(`${out} holds the files of ${address} (company ${ALPHA}), and this run connects to ${address} (company ${BETA}), another company`);
      expect(refused.stderr).not.toContain('beta-key');
      expect(refused.stderr).not.toContain('beta-secret');
      expect(tree(at)).toEqual(before);
    }

    // The first company's runs go on as before.
    expectOk(await runCli(['photos', 'export', '--out', folder, ...alpha()]));
  });

  it("archiving into the first's archive exits 2, names both, and changes nothing", { timeout: TIMEOUT }, async () => {
    const archive = join(tempDir(), 'archive');
    const file = archivePipeline('nightly-shared', archive);
    expectOk(await runCli(['run', file], envOf('alpha-key', 'alpha-secret')));
    const snapshots = readdirSync(join(archive, 'snapshots'));
    const doc = JSON.parse(readFileSync(join(archive, 'snapshots', snapshots[0]!, 'snapshot.json'), 'utf8')) as { source: unknown };
    expect(doc.source).toEqual({ base_url: new URL(emu().url).origin, company: ALPHA });
    const before = tree(archive);

    const refused = await runCli(['run', file, '--json'], envOf('beta-key', 'beta-secret'));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`to.archive ${archive} holds the files of`);
    expect(refused.stderr).toContain(`(company ${ALPHA}), and this run connects to`);
    expect(refused.stderr).toContain(`(company ${BETA}), another company`);
    expect(JSON.parse(refused.stdout)).toMatchObject({ status: 'failed', exit_code: 2 });
    expect(tree(archive)).toEqual(before);
  });
});

describe('a target made before sources were recorded', () => {
  it('is adopted by the next run, which records its source; another spelling of the address is the same company', { timeout: TIMEOUT }, async () => {
    const out = join(tempDir(), 'photos');
    expectOk(await runCli(['photos', 'export', '--out', out, ...alpha()]));
    const manifest = join(out, 'manifest.jsonl');
    // As an earlier version wrote it: file lines only.
    writeFileSync(manifest, readFileSync(manifest, 'utf8').split('\n').slice(1).join('\n'));
    expect(firstLine(manifest)).toMatchObject({ kind: 'photo' });

    // The same service under another host name (localhost for 127.0.0.1), with the first company's key.
    const other = emu().url.replace('127.0.0.1', 'localhost');
    const run = await runCli(['photos', 'export', '--out', out, '--base-url', other, '--consumer-key', 'alpha-key', '--consumer-secret', 'alpha-secret']);
    expectOk(run);
    expect(firstLine(manifest)).toEqual({ kind: 'source', base_url: new URL(other).origin, company: ALPHA });
    const verify = await runCli(['verify', out]);
    expectOk(verify);
  });
});

describe('retention', () => {
  it("counts only the archive's own company's snapshots", { timeout: TIMEOUT }, async () => {
    const archive = join(tempDir(), 'archive');
    // The same pipeline (by name) without retention, then with keep_last: 1.
    const keepAll = join(dir, 'keep-all.yaml');
    writeFileSync(keepAll, `name: nightly-retention\nfrom: { service: attachments }\nto: { archive: ${archive} }\n`);
    const keepOne = archivePipeline('nightly-retention', archive);
    for (let i = 0; i < 2; i += 1) expectOk(await runCli(['run', keepAll], envOf('alpha-key', 'alpha-secret')));
    // The older snapshot as if another company's had come in (copied by hand).
    const [older, newer] = readdirSync(join(archive, 'snapshots')).sort();
    const docFile = join(archive, 'snapshots', older!, 'snapshot.json');
    const doc = JSON.parse(readFileSync(docFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(docFile, JSON.stringify({ ...doc, source: { base_url: 'https://other.example', company: BETA } }));

    const run = await runCli(['run', keepOne], envOf('alpha-key', 'alpha-secret'));
    expectOk(run);
    expect(run.stderr + run.stdout).toContain(`retention removed 1 snapshot: ${newer}`);
    const left = readdirSync(join(archive, 'snapshots')).sort();
    expect(left).toHaveLength(2);
    expect(left[0]).toBe(older);

    const forget = await runCli(['archive', 'forget', archive, '--keep-last', '1', '--dry-run']);
    expectOk(forget);
    expect(forget.stdout).toContain(`keep    ${older}  of another company, https://other.example (company ${BETA}); not counted, left as it is`);
    expect(forget.stdout).toContain('would remove 0');
  });
});
