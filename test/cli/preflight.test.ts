/**
 * Checked before the first request (DESIGN.md section 8), with real CLI children: a report or an
 * output that cannot be written, a file where a folder is needed (or the reverse), an existing
 * file named x.zip that is not a zip or is a zip of other files, and a folder of other files that
 * is no export folder are usage errors (exit 2) naming the path and the problem, found before any
 * request but at most the token, and leaving everything as it was. `--force` replaces such a zip
 * or writes into such a folder; missing folders are made.
 */
import { createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { ZipArchive } from 'archiver';
import { extname, join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { state, tempDir } from '../helpers/export.js';
import { connectionArgs, finished, runCli, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { KEY, SECRET } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';

const MEMBERS = 12;
const emu = useEmulator({ generate: { members: MEMBERS, photo_ratio: 1, photo_bytes: [8_192, 10_000], attachments_per_member: [1, 1], attachment_bytes: [2_048, 4_000] } });

const api = useClient(emu);

type Stats = { requests: Record<string, number>; storage_downloads: number };

/** Runs the CLI; answers what it did and which API requests it made meanwhile, the token set apart. */
async function counted(e: TestEmulator, args: string[]): Promise<CliRun & { requests: Record<string, number>; downloads: number }> {
  const before = (await e.control('GET', '/stats')) as Stats;
  const run = await runCli([...args, ...connectionArgs(e)]);
  const after = (await e.control('GET', '/stats')) as Stats;
  const requests: Record<string, number> = {};
  for (const [route, n] of Object.entries(after.requests)) {
    const made = n - (before.requests[route] ?? 0);
    if (made > 0 && route !== 'POST /token') requests[route] = made;
  }
  return { ...run, requests, downloads: after.storage_downloads - before.storage_downloads };
}

function expectRefusedBeforeAnyRequest(run: Awaited<ReturnType<typeof counted>>, ...mentions: string[]): void {
  expect(run.code, run.stderr).toBe(2);
  for (const text of mentions) expect(run.stderr).toContain(text);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.requests).toEqual({});
  expect(run.downloads).toBe(0);
}

it('a --report under a regular file: exit 2 before any request, for an export and both imports', async () => {
  const dir = tempDir();
  const notAFolder = join(dir, 'notes.txt');
  writeFileSync(notAFolder, 'a file, not a folder');
  const report = join(notAFolder, 'report.json');
  const out = join(dir, 'photos');
  const exported = await counted(emu(), ['photos', 'export', '--out', out, '--report', report]);
  expectRefusedBeforeAnyRequest(exported, `--report ${report}: ${notAFolder} is a file, not a folder`);
  expect(existsSync(out)).toBe(false);

  const source = join(dir, 'to-import');
  mkdirSync(source);
  writeFileSync(join(source, 'E0001.jpg'), readFileSync(join(import.meta.dirname, '../../samples/company/photos', readdirSync(join(import.meta.dirname, '../../samples/company/photos'))[0]!)));
  const photos = await counted(emu(), ['photos', 'import', source, '--report', report]);
  expectRefusedBeforeAnyRequest(photos, `--report ${report}: ${notAFolder} is a file, not a folder`);
  const attachments = await counted(emu(), ['attachments', 'import', source, '--sheet', '1', '--field', '1', '--report', report]);
  expectRefusedBeforeAnyRequest(attachments, `--report ${report}: ${notAFolder} is a file, not a folder`);
  expect(readFileSync(notAFolder, 'utf8')).toBe('a file, not a folder');
});

it('a --report that is a folder: exit 2 before any request', async () => {
  const dir = tempDir();
  const run = await counted(emu(), ['photos', 'export', '--out', join(dir, 'photos.zip'), '--report', dir]);
  expectRefusedBeforeAnyRequest(run, `--report ${dir}: is a folder`);
  expect(readdirSync(dir)).toEqual([]);
});

it('an --out under a file, or a file where the folder export needs a folder: exit 2 before any request', async () => {
  const dir = tempDir();
  const file = join(dir, 'taken');
  writeFileSync(file, 'kept');
  const under = await counted(emu(), ['photos', 'export', '--out', join(file, 'photos')]);
  expectRefusedBeforeAnyRequest(under, `--out ${join(file, 'photos')}: ${file} is a file, not a folder`);
  const zipUnder = await counted(emu(), ['attachments', 'export', '--out', join(file, 'deeper', 'a.zip')]);
  expectRefusedBeforeAnyRequest(zipUnder, `${file} is a file, not a folder`);
  const onFile = await counted(emu(), ['photos', 'export', '--out', file]);
  expectRefusedBeforeAnyRequest(onFile, `--out ${file} is a file; a folder export needs a folder`);
  const zipFolder = join(dir, 'folder.zip');
  mkdirSync(zipFolder);
  const onFolder = await counted(emu(), ['photos', 'export', '--out', zipFolder]);
  expectRefusedBeforeAnyRequest(onFolder, `--out ${zipFolder} is a folder; a zip export needs a file`);
  expect(readFileSync(file, 'utf8')).toBe('kept');
  expect(readdirSync(dir).sort()).toEqual(['folder.zip', 'taken']);
});

it('a file where a pipeline\'s folder or archive goes fails its run before its lock, as the CLI and the SDK refuse it', async () => {
  const dir = tempDir();
  const file = join(dir, 'taken');
  writeFileSync(file, 'kept');
  for (const [key, needs] of [['folder', 'a folder export needs a folder'], ['archive', 'an archive needs a folder']] as const) {
    const pipeline = join(tempDir(), `to-a-file-${key}.yaml`);
    writeFileSync(pipeline, `name: to-a-file\nconnection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }\nfrom: { service: photos }\nto: { ${key}: ${file} }\n`);
    const before = (await emu().control('GET', '/stats')) as Stats;
    const piped = await runCli(['run', pipeline]);
    expect(piped.code, piped.stderr).toBe(1);
    expect(piped.stderr).toContain(`to.${key} ${file} is a file; ${needs}`);
    expect(((await emu().control('GET', '/stats')) as Stats).storage_downloads).toBe(before.storage_downloads);
  }
  await expect(runExport({ client: api(), what: 'photos', out: file })).rejects.toThrow(`${file} is a file; a folder export needs a folder`);
  expect(readFileSync(file, 'utf8')).toBe('kept');
  expect(readdirSync(dir)).toEqual(['taken']);
});

// Nine CLI processes one after another: a loaded CI machine took them past the default 30 s.
it('a --report or --log-file that is the export, a file in it, or the import source: exit 2 before any request, all left as they were', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const zip = join(dir, 'photos.zip');
  const folder = join(dir, 'photos');
  expect((await counted(emu(), ['photos', 'export', '--out', zip])).code).toBe(0);
  expect((await counted(emu(), ['photos', 'export', '--out', folder])).code).toBe(0);
  const zipBytes = readFileSync(zip);
  const manifest = readFileSync(join(folder, 'manifest.jsonl'));

  expectRefusedBeforeAnyRequest(await counted(emu(), ['photos', 'export', '--out', zip, '--report', zip]), `--report ${zip}: is the export itself, which it would replace`);
  expectRefusedBeforeAnyRequest(await counted(emu(), ['photos', 'export', '--out', zip, '--report', `${zip}.partial`]), `--report ${zip}.partial: is a file the export ${zip} keeps beside it`);
  expectRefusedBeforeAnyRequest(await counted(emu(), ['photos', 'export', '--out', folder, '--report', join(folder, 'manifest.jsonl')]), `is inside the export ${folder}, among the files it holds`);
  expectRefusedBeforeAnyRequest(await counted(emu(), ['photos', 'export', '--out', zip, '--log-file', zip]), `--log-file ${zip}: is --out itself`);
  // An import's report may not be its source, nor fall among the files it reads.
  expectRefusedBeforeAnyRequest(await counted(emu(), ['photos', 'import', folder, '--dry-run', '--report', join(folder, 'manifest.jsonl')]), 'is inside the import source');
  expectRefusedBeforeAnyRequest(await counted(emu(), ['photos', 'import', zip, '--dry-run', '--report', zip]), `--report ${zip}: is the import source itself`);
  expect(readFileSync(zip).equals(zipBytes)).toBe(true);
  expect(readFileSync(join(folder, 'manifest.jsonl')).equals(manifest)).toBe(true);
  expect(readdirSync(dir).sort()).toEqual(['photos', 'photos.zip']);

  // `x.zip/` is neither a zip nor a folder to guess at.
  expectRefusedBeforeAnyRequest(await counted(emu(), ['photos', 'export', '--out', `${join(dir, 'new.zip')}/`]), 'ends in .zip and a slash');
  expect(existsSync(join(dir, 'new.zip'))).toBe(false);
});

it('a report that cannot be written at the end (a full disk): the summary is said all the same, naming the report; exit 1', async () => {
  const out = join(tempDir(), 'photos');
  const run = await counted(emu(), ['photos', 'export', '--out', out, '--report', '/dev/full']);
  expect(run.code).toBe(1);
  expect(run.stdout).toMatch(new RegExp(`photos export: ${MEMBERS} ok;`));
  expect(run.stderr).toContain('--report /dev/full could not be written (no space left on the device); what the run did is in the summary above');
  expect((await verifyExport(out)).files).toBe(MEMBERS);
});

it('an existing file named x.zip that is not a zip is left byte for byte (exit 2); --force replaces it', async () => {
  const dir = tempDir();
  const zip = join(dir, 'x.zip');
  const bytes = Buffer.from('quarterly numbers, not a zip at all\n');
  writeFileSync(zip, bytes);
  const run = await counted(emu(), ['photos', 'export', '--out', zip]);
  expectRefusedBeforeAnyRequest(run, `--out ${zip} is a file that is not a zip archive`, '--force');
  expect(readFileSync(zip).equals(bytes)).toBe(true);
  expect(readdirSync(dir)).toEqual(['x.zip']);

  const forced = await counted(emu(), ['photos', 'export', '--out', zip, '--force']);
  expect(forced.code, forced.stderr).toBe(0);
  const check = await verifyExport(zip);
  expect(check.problems).toEqual([]);
  expect(check.files).toBe(MEMBERS);
  // A zip there already (this one) is an earlier export: replaced without --force.
  const again = await counted(emu(), ['photos', 'export', '--out', zip]);
  expect(again.code, again.stderr).toBe(0);
  expect(readdirSync(dir)).toEqual(['x.zip']);
});

it('missing folders of --out and --report are made; --wait-lock takes only a duration', async () => {
  const dir = tempDir();
  const zip = join(dir, 'a', 'b', 'attachments.zip');
  const report = join(dir, 'reports', 'nightly', 'report.json');
  const run = await counted(emu(), ['attachments', 'export', '--out', zip, '--report', report]);
  expect(run.code, run.stderr).toBe(0);
  expect((await verifyExport(zip)).problems).toEqual([]);
  expect(JSON.parse(readFileSync(report, 'utf8')).items).toHaveLength(MEMBERS);

  const bad = await counted(emu(), ['photos', 'export', '--out', join(dir, 'p'), '--wait-lock', 'a while']);
  expectRefusedBeforeAnyRequest(bad, '--wait-lock must be a duration such as 30s, 5m or 1h, got "a while"');
});

it('a folder of other files that is no export folder is left as it was (exit 2); --force writes there, and hidden names alone are no bar', async () => {
  const dir = tempDir();
  const member = (await state(emu())).members.find((m) => m.photo)!;
  // Where the export would put this member's photo.
  const mineAt = join(dir, 'photos', `${member.code}${extname(member.photo!.file_name)}`);
  const mine = Buffer.from('a photo of my own, not the service\'s\n');
  mkdirSync(join(dir, 'photos'));
  writeFileSync(mineAt, mine);
  writeFileSync(join(dir, 'notes.txt'), 'notes\n');
  const run = await counted(emu(), ['photos', 'export', '--out', dir]);
  expectRefusedBeforeAnyRequest(run, `--out ${dir} holds notes.txt, photos, and no manifest.jsonl: it is no export folder`, '--force');
  expect(readFileSync(mineAt).equals(mine)).toBe(true);
  expect(readdirSync(dir).sort()).toEqual(['notes.txt', 'photos']);

  // A pipeline file has no --force: its run fails before its lock, and writes nothing.
  const pipeline = join(tempDir(), 'to-my-folder.yaml');
  writeFileSync(pipeline, `name: to-my-folder\nconnection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }\nfrom: { service: photos }\nto: { folder: ${dir} }\n`);
  const piped = await runCli(['run', pipeline]);
  expect(piped.code, piped.stderr).toBe(1);
  expect(piped.stderr).toContain(`to.folder ${dir} holds notes.txt, photos, and no manifest.jsonl`);
  expect(readdirSync(dir).sort()).toEqual(['notes.txt', 'photos']);

  const forced = await counted(emu(), ['photos', 'export', '--out', dir, '--force']);
  expect(forced.code, forced.stderr).toBe(0);
  expect((await verifyExport(dir)).files).toBe(MEMBERS);
  expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('notes\n');

  const hidden = tempDir();
  writeFileSync(join(hidden, '.DS_Store'), 'finder\n');
  const plain = await counted(emu(), ['photos', 'export', '--out', hidden]);
  expect(plain.code, plain.stderr).toBe(0);
});

it('a zip of other files (no manifest.jsonl in it) is left byte for byte (exit 2); --force replaces it', async () => {
  const dir = tempDir();
  const zip = join(dir, 'backup.zip');
  // The user's own zip, made by archiver as any zip tool would make one.
  const archive = new ZipArchive({ zlib: { level: 6 } });
  const written = createWriteStream(zip);
  archive.pipe(written);
  archive.append('tax return 2025\n', { name: 'docs/tax.txt' });
  await archive.finalize();
  await once(written, 'close');
  const bytes = readFileSync(zip);
  const run = await counted(emu(), ['photos', 'export', '--out', zip]);
  expectRefusedBeforeAnyRequest(run, `--out ${zip} is a zip with no manifest.jsonl (a zip of other files, or a damaged export), and the export would replace it`, '--force');
  expect(readFileSync(zip).equals(bytes)).toBe(true);
  expect(readdirSync(dir)).toEqual(['backup.zip']);

  const pipeline = join(tempDir(), 'to-my-zip.yaml');
  writeFileSync(pipeline, `name: to-my-zip\nconnection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }\nfrom: { service: photos }\nto: { zip: ${zip} }\n`);
  const piped = await runCli(['run', pipeline]);
  expect(piped.code, piped.stderr).toBe(1);
  expect(piped.stderr).toContain(`to.zip ${zip} is a zip with no manifest.jsonl`);
  expect(readFileSync(zip).equals(bytes)).toBe(true);

  const forced = await counted(emu(), ['photos', 'export', '--out', zip, '--force']);
  expect(forced.code, forced.stderr).toBe(0);
  expect((await verifyExport(zip)).files).toBe(MEMBERS);
});

it('a folder a killed export left before its first manifest line is still its own: the rerun completes it', async () => {
  const dir = join(tempDir(), 'photos-export');
  await emu().control('POST', '/faults', { storage: { latency_ms: 3_000 } });
  const child = spawnCli(['photos', 'export', '--out', dir, ...connectionArgs(emu())]);
  const done = finished(child);
  try {
    // Killed while every download waits: its lock and temporary folder stay, and no manifest yet.
    while (!existsSync(join(dir, '.wds-tmp'))) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
  } finally {
    await emu().control('DELETE', '/faults');
  }
  expect(existsSync(join(dir, 'manifest.jsonl'))).toBe(false);
  // As if its first file had landed just before the kill, ahead of its manifest line.
  const member = (await state(emu())).members.find((m) => m.photo)!;
  mkdirSync(join(dir, 'photos'));
  writeFileSync(join(dir, 'photos', `${member.code}${extname(member.photo!.file_name)}`), 'half of a run\n');
  const rerun = await runCli(['photos', 'export', '--out', dir, ...connectionArgs(emu())]);
  expect(rerun.code, rerun.stderr).toBe(0);
  const check = await verifyExport(dir);
  expect(check.problems).toEqual([]);
  expect(check.files).toBe(MEMBERS);
}, 60_000);
