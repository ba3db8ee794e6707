/**
 * Paths from a manifest are untrusted (DESIGN.md section 8): a line whose path goes up with `..`,
 * is absolute, or leads through a link inside the export folder is reported by `verify` naming
 * its line (exit 3), is never read or written by a rerun of the export, and is refused by an
 * import of the folder. The outside files here have the bytes, size and sha256 the manifest
 * claims, so only the path rule can tell them apart.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, rename, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { openSource } from '../../src/sources/open-source.js';
import type { ManifestLine } from '../../src/sinks/manifest.js';

const emu = useEmulator({ generate: { members: 6, photo_bytes: [9_000, 12_000] } });
const client = useClient(emu);

interface Victim {
  path: string;
  bytes: Buffer;
  mtimeMs: number;
}

let folder: string;
let victims: Record<'up' | 'absolute' | 'linkedFolder' | 'linkedFile', Victim>;
/** The manifest line number of each tampered line. */
let lineOf: Record<string, number>;
/** Photos in the export. */
let total: number;

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** An outside file holding `bytes`, its mtime set in the past so that a rewrite would show. */
async function victim(path: string, bytes: Buffer): Promise<Victim> {
  await writeFile(path, bytes);
  await utimes(path, new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'));
  return { path, bytes, mtimeMs: (await stat(path)).mtimeMs };
}

beforeAll(async () => {
  const dir = tempDir();
  folder = join(dir, 'export');
  const outside = join(dir, 'outside');
  await mkdir(outside);
  await runExport({ client: client(), what: 'photos', out: folder, concurrency: 2 });
  const lines = (await readFile(join(folder, 'manifest.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as ManifestLine).filter((l) => (l.kind as string) !== 'source');
  total = lines.length;
  expect(total).toBeGreaterThanOrEqual(5);
  const bytesOf = (line: ManifestLine): Promise<Buffer> => readFile(join(folder, line.path));
  const [a, b, c, d] = lines as [ManifestLine, ManifestLine, ManifestLine, ManifestLine];
  // Each tampered line claims the file's true size and sha256 and an older updated_at, so that a
  // rerun that trusted it would either keep it as intact or download over it.
  const old = '2001-01-01 00:00:00';
  victims = {
    up: await victim(join(dir, 'victim-up.jpg'), await bytesOf(a)),
    absolute: await victim(join(outside, 'victim-absolute.jpg'), await bytesOf(b)),
    linkedFolder: await victim(join(outside, `${c.code}.jpg`), await bytesOf(c)),
    linkedFile: await victim(join(outside, 'victim-file.jpg'), await bytesOf(d)),
  };
  for (const v of Object.values(victims)) expect(sha256(v.bytes)).toMatch(/^[0-9a-f]{64}$/);
  // `old` is a link to the outside folder; the photo of d is replaced by a link to an outside file.
  await symlink(outside, join(folder, 'old'));
  await rm(join(folder, d.path));
  await symlink(victims.linkedFile.path, join(folder, d.path));
  const tampered: ManifestLine[] = [
    { ...a, path: '../victim-up.jpg', updated_at: old },
    { ...b, path: victims.absolute.path, updated_at: old },
    { ...c, path: `old/${c.code}.jpg`, updated_at: old },
    { ...d, updated_at: old },
    ...lines.slice(4),
  ];
  await writeFile(join(folder, 'manifest.jsonl'), tampered.map((l) => `${JSON.stringify(l)}\n`).join(''));
  lineOf = { up: 1, absolute: 2, linkedFolder: 3, linkedFile: 4 };
});

async function expectUntouched(): Promise<void> {
  for (const [name, v] of Object.entries(victims)) {
    expect((await readFile(v.path)).equals(v.bytes), `${name} bytes`).toBe(true);
    expect((await stat(v.path)).mtimeMs, `${name} mtime`).toBe(v.mtimeMs);
  }
}

describe('manifest paths from an untrusted manifest', () => {
  it('verify reports each refused line by its number and exits 3', async () => {
    const result = await verifyExport(folder);
    const text = result.problems.map((p) => `${p.path}: ${p.problem}`).join('\n');
    expect(text).toMatch(new RegExp(`line ${lineOf.up}: the path "\\.\\./victim-up\\.jpg" goes up with \\.\\.`));
    expect(text).toContain(`line ${lineOf.absolute}: the path ${JSON.stringify(victims.absolute.path)} is absolute`);
    expect(text).toMatch(new RegExp(`manifest.jsonl line ${lineOf.linkedFolder}: leads through a link \\(old\\)`));
    expect(text).toMatch(new RegExp(`manifest.jsonl line ${lineOf.linkedFile}: leads through a link \\(photos/`));
    // None of the four is counted as a match.
    expect(result.ok).toBe(total - 4);

    const run = await runCli(['verify', folder]);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toContain(`${total - 4} of ${total - 2} files match the manifest`);
    expect(run.stdout).toContain(`; ${result.problems.length} problems:`);
    expect(run.stdout).toContain(`line ${lineOf.up}: the path "../victim-up.jpg"`);
    expect(run.stdout).toContain(`line ${lineOf.linkedFolder}: leads through a link (old)`);
    expect(run.stderr).not.toContain('    at ');
    await expectUntouched();
  });

  it('an import of the folder refuses the lines and reads none of the outside files', async () => {
    const source = await openSource(folder);
    const refused: string[] = [];
    const taken: string[] = [];
    for await (const entry of source.entries()) {
      if (entry.kind === 'refused') refused.push(entry.refused.reason);
      else taken.push(entry.file.relPath);
    }
    await source.close();
    expect(taken).toHaveLength(total - 4);
    expect(refused).toEqual(expect.arrayContaining([
      expect.stringContaining('goes up with ..'),
      expect.stringContaining('is absolute'),
      expect.stringContaining('leads through a link (old)'),
      'is a link; links are not followed',
    ]));
    expect(taken.some((p) => p.startsWith('old/') || p.startsWith('..') || p.startsWith('/'))).toBe(false);
  });

  it('a rerun of the export leaves every outside file byte-identical and writes a clean export', async () => {
    const run = await runCli(['photos', 'export', '--out', folder, ...connectionArgs(emu())]);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    await expectUntouched();
    // The photos behind the refused lines were fetched again into the folder itself.
    const result = await verifyExport(folder);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(total);
    const manifest = await readFile(join(folder, 'manifest.jsonl'), 'utf8');
    expect(manifest).not.toContain('victim');
    expect(manifest).not.toContain('"old/');
    expect((await lstat(join(folder, 'old'))).isSymbolicLink()).toBe(true);
  });

  it('a rerun into a folder whose photos folder is a link stops naming the link, and writes nothing through it', async () => {
    const dir = tempDir();
    const out = join(dir, 'export');
    await runExport({ client: client(), what: 'photos', out, concurrency: 2 });
    // The photos folder moves outside and a link takes its place; the manifest is left as it was.
    const outside = join(dir, 'elsewhere');
    await rename(join(out, 'photos'), outside);
    await symlink(outside, join(out, 'photos'));
    const kept = new Map<string, Victim>();
    for (const name of await readdir(outside)) kept.set(name, await victim(join(outside, name), Buffer.from(`not the service's bytes of ${name}`)));

    const verified = await runCli(['verify', out]);
    expect(verified.code, verified.stderr).toBe(3);
    // Line 1 names the source; line 2 is the first photo's.
    expect(verified.stdout).toMatch(/manifest\.jsonl line 2: leads through a link \(photos\)/);

    const run = await runCli(['photos', 'export', '--out', out, ...connectionArgs(emu())]);
    expect(run.code, run.stdout).not.toBe(0);
    expect(run.stderr).toContain(`${join(out, 'photos')} is a link; an export does not write through links`);
    expect(run.stderr).not.toContain('    at ');
    expect([...(await readdir(outside))].sort()).toEqual([...kept.keys()].sort());
    for (const [name, v] of kept) {
      expect((await readFile(v.path)).equals(v.bytes), name).toBe(true);
      expect((await stat(v.path)).mtimeMs, name).toBe(v.mtimeMs);
    }
  }, 60_000);
});
