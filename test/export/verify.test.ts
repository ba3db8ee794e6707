/**
 * `wds-files verify <dir | zip>` (issue 4; DESIGN.md section 3): an export folder and an export
 * zip pass; a changed byte, a deleted file and a file the manifest does not name are each reported
 * by path, and the CLI exits 3.
 */
import { createWriteStream } from 'node:fs';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import { ZipArchive } from 'archiver';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { readZipExport, tempDir } from '../helpers/export.js';
import { runCli } from '../helpers/cli-process.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport, VerifyItems } from '../../src/pipelines/verify.js';
import type { WdsClient } from '../../src/index.js';

const emu = useEmulator({
  generate: { members: 12, photo_bytes: [10_000, 20_000], attachments_per_member: [1, 2], attachment_bytes: [3_000, 10_000] },
});
let client: WdsClient | undefined;
let folder: string;
let zip: string;
let paths: string[];

beforeAll(async () => {
  client = clientFor(emu());
  const dir = tempDir();
  folder = join(dir, 'photos');
  zip = join(dir, 'attachments.zip');
  await runExport({ client, what: 'photos', out: folder, concurrency: 4 });
  await runExport({ client, what: 'attachments', out: zip, concurrency: 4 });
  paths = (await readFile(join(folder, 'manifest.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { kind: string; path: string }).filter((l) => l.kind !== 'source').map((l) => l.path);
});
afterAll(async () => {
  await client?.close();
});

/** Copies a zip entry by entry, letting `edit` change, drop (null) or keep each, then adds `extra`. */
async function rewriteZip(from: string, to: string, edit: (name: string, data: Buffer) => Buffer | null, extra: Record<string, Buffer>): Promise<void> {
  const entries: [string, Buffer][] = await new Promise((resolve, reject) => {
    yauzl.open(from, { lazyEntries: true }, (error, z) => {
      if (error || !z) return reject(error);
      const out: [string, Buffer][] = [];
      z.on('end', () => resolve(out));
      z.on('entry', (entry: yauzl.Entry) => {
        z.openReadStream(entry, (err, stream) => {
          if (err || !stream) return reject(err);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            out.push([entry.fileName, Buffer.concat(chunks)]);
            z.readEntry();
          });
        });
      });
      z.readEntry();
    });
  });
  const archive = new ZipArchive();
  const output = createWriteStream(to);
  archive.pipe(output);
  const extras = Object.entries(extra);
  // The manifest stays last, as the export writes it.
  const manifest = entries.filter(([n]) => n === 'manifest.jsonl');
  for (const [name, data] of [...entries.filter(([n]) => n !== 'manifest.jsonl'), ...extras, ...manifest]) {
    const edited = extras.some(([n]) => n === name) ? data : edit(name, data);
    if (edited) archive.append(edited, { name });
  }
  const closed = once(output, 'close');
  await archive.finalize();
  await closed;
}

const flipFirstByte = (data: Buffer): Buffer => {
  const copy = Buffer.from(data);
  copy[0] = copy[0]! ^ 0xff;
  return copy;
};

describe('an intact export', () => {
  it.each(['folder', 'zip'] as const)('a %s passes, and the CLI exits 0', async (kind) => {
    const target = kind === 'zip' ? zip : folder;
    const result = await verifyExport(target);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(result.files);
    expect(result.files).toBeGreaterThan(5);
    const run = await runCli(['verify', target]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`${result.files} of ${result.files} files match`);
  });
});

describe('a damaged export', () => {
  it('a folder: the changed, the deleted and the extra file are named; the CLI exits 3', async () => {
    const copy = join(tempDir(), 'photos');
    await cp(folder, copy, { recursive: true });
    const [changed, deleted] = [paths[0]!, paths[1]!];
    await writeFile(join(copy, changed), flipFirstByte(await readFile(join(copy, changed))));
    await rm(join(copy, deleted));
    await writeFile(join(copy, 'photos', 'EXTRA.jpg'), 'not exported');

    const result = await verifyExport(copy, { items: true });
    expect(result.problems).toEqual(expect.arrayContaining([
      { path: changed, problem: expect.stringContaining('sha256') },
      { path: deleted, problem: 'missing' },
      { path: 'photos/EXTRA.jpg', problem: expect.stringContaining('not in the manifest') },
    ]));
    expect(result.problems).toHaveLength(3);
    expect(result.ok).toBe(result.files - 2);
    // Every manifest line and the extra file, each with how it came out.
    const items = [...result.items!];
    expect(result.items!.count).toBe(result.files + 1);
    expect(items).toHaveLength(result.files + 1);
    expect(items).toEqual(expect.arrayContaining([{ path: deleted, outcome: 'problem', problem: 'missing' }, { path: paths[2], outcome: 'ok', size: expect.any(Number) }]));
    result.items!.close();

    const run = await runCli(['verify', copy]);
    expect(run.code, run.stderr).toBe(3);
    for (const path of [changed, deleted, 'photos/EXTRA.jpg']) expect(run.stdout).toContain(path);
  });

  it('a folder where the manifest lists a file is named as such, not a crash; a stopped zip\'s .partial is checked as a zip', async () => {
    const copy = join(tempDir(), 'photos');
    await cp(folder, copy, { recursive: true });
    const replaced = paths[0]!;
    await rm(join(copy, replaced));
    await mkdir(join(copy, replaced));
    const run = await runCli(['verify', copy]);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toContain(`${replaced}: is not a regular file (a folder?), the manifest lists a file`);

    const partial = join(tempDir(), 'photos.zip.partial');
    await cp(zip, partial);
    const checked = await runCli(['verify', partial]);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/files match the manifest/);
  });

  it('a zip: the changed, the deleted and the extra entry are named; the CLI exits 3', async () => {
    const { manifest } = await readZipExport(zip);
    const [changed, deleted] = [manifest[0]!.path, manifest[1]!.path];
    const copy = join(tempDir(), 'damaged.zip');
    await rewriteZip(zip, copy, (name, data) => (name === changed ? flipFirstByte(data) : name === deleted ? null : data), {
      'attachments/extra.pdf': Buffer.from('not exported'),
    });

    const result = await verifyExport(copy, { items: true });
    expect(result.problems).toEqual(expect.arrayContaining([
      { path: changed, problem: expect.stringContaining('sha256') },
      { path: deleted, problem: 'missing' },
      { path: 'attachments/extra.pdf', problem: expect.stringContaining('not in the manifest') },
    ]));
    expect(result.problems).toHaveLength(3);

    const run = await runCli(['verify', copy, '--json']);
    expect(run.code, run.stderr).toBe(3);
    const summary = JSON.parse(run.stdout) as { problems: { path: string }[] };
    expect(summary.problems.map((p) => p.path).sort()).toEqual([changed, deleted, 'attachments/extra.pdf'].sort());
  });
});

describe('the items of verifyExport', () => {
  it('are kept on disk past a part, read back in order as often as iterated, and gone once closed', () => {
    const items = new VerifyItems();
    const made = Array.from({ length: 700 }, (_, i) => (i % 3 ? { path: `f${i}`, outcome: 'ok' as const, size: i } : { path: `f${i}`, outcome: 'problem' as const, problem: 'missing' }));
    for (const item of made) items.add(item);
    expect(items.count).toBe(700);
    expect([...items]).toEqual(made);
    expect([...items]).toEqual(made);
    items.close();
    expect(() => [...items]).toThrow('no longer readable');
  });
});

describe('a target that is no export', () => {
  it('says whether the target or its manifest is missing, or what it is instead', async () => {
    const dir = tempDir();
    const missing = join(dir, 'nope');
    const file = join(dir, 'notes.txt');
    const empty = join(dir, 'empty');
    await writeFile(file, 'not an export\n');
    await cp(join(folder, 'manifest.jsonl'), join(empty, 'kept.jsonl'));
    const said = async (target: string): Promise<string> => {
      const run = await runCli(['verify', target]);
      expect(run.code).toBe(1);
      return run.stderr.trim();
    };
    expect(await said(missing)).toBe(`wds-files: ${missing}: no such folder or zip`);
    expect(await said(file)).toBe(`wds-files: ${file}: neither a folder nor a .zip file; verify checks an export folder, a snapshot or an export zip`);
    expect(await said(empty)).toBe(`wds-files: ${empty}: no manifest.jsonl; it is not an export folder`);
  }, 30_000);
});
