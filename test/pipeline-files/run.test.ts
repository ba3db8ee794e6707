/**
 * `run` and `plan` of pipeline files against the in-process emulator: a drop folder imported
 * into the service with its files moved by their fate (sent to done/, refused to refused/ with a
 * reason beside each, nothing overwritten, nothing moved when the run fails); the photos exported
 * to a zip that verifies; a plan that changes nothing.
 */
import { readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineFile } from '../../src/pipeline-files/load.js';
import { planPipeline } from '../../src/pipeline-files/plan.js';
import { runPipelineFile } from '../../src/pipeline-files/run.js';
import { connectPipeline } from '../../src/pipeline-files/connection.js';
import { validatePipelineFiles } from '../../src/pipeline-files/validate.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { useEnv } from '../helpers/env.js';
import { photoHashes, plain, sha256, stats, writeFiles } from '../import/photo-helpers.js';

// The import journal and the limit windows of this file's runs, not the user's.
useEnv({ XDG_STATE_HOME: tempDir('wds-pipeline-state-'), XDG_CACHE_HOME: tempDir('wds-pipeline-cache-') });
const KEY = 'pipeline-run-key';
const SECRET = 'pipeline-run-secret-5c1d';
const emu = useEmulator({ seed: 'samples/company', consumerKey: KEY, consumerSecret: SECRET, limits: { updatesPerMinute: 10000 } });

/** A pipeline file in a folder of its own, its connection the test's emulator. */
async function pipeline(lines: string[]): Promise<string> {
  const dir = tempDir('wds-pipeline-');
  const file = join(dir, 'pipeline.yaml');
  await writeFile(file, [
    ...lines,
    'connection:',
    `  base_url: ${emu().url}`,
    `  consumer_key: ${KEY}`,
    '  consumer_secret: ${TEST_SECRET}',
    '',
  ].join('\n'));
  return file;
}

const load = (file: string, secret = SECRET) => loadPipelineFile(file, { TEST_SECRET: secret });
/** Files dropped a minute ago: a drop folder takes only files that have settled. */
async function settle(dir: string): Promise<void> {
  const then = new Date(Date.now() - 60_000);
  for (const name of await readdir(dir)) await utimes(join(dir, name), then, then);
}
const names = async (dir: string): Promise<string[]> => (await readdir(dir).catch(() => [] as string[])).sort();

const DROPBOX = [
  'name: dropbox-test',
  'from: { folder: drop/inbox, move: { done: drop/done, refused: drop/refused } }',
  'steps:',
  '  - submit: { trim: false }',
  'to: { service: photos }',
];

describe('pipeline files: run and plan', () => {
  it('a drop folder: sent photos go to done/ (never over a file there), refused ones to refused/ with a reason; a run that fails moves nothing', async () => {
    const file = await pipeline(DROPBOX);
    const drop = join(file, '..', 'drop');
    const a1 = await plain(40, 40, 11).jpeg().toBuffer();
    const a17 = await plain(40, 40, 12).jpeg().toBuffer();
    await writeFiles(join(drop, 'inbox'), { 'A0001.jpg': a1, 'A0017.jpg': a17, 'A0002.tif': await plain(40, 40, 14).tiff().toBuffer(), 'Q0001.jpg': await plain(40, 40, 13).jpeg().toBuffer(), 'notes.txt': 'not a photo' });
    await writeFiles(join(drop, 'done'), { 'A0001.jpg': 'a photo done by an earlier run' });
    await settle(join(drop, 'inbox'));

    // Refused credentials: the run fails as a whole, and every file stays where it was.
    const failed = await runPipelineFile(await load(file, 'a-wrong-secret-9f2e'));
    expect(failed).toMatchObject({ pipeline: 'dropbox-test', status: 'failed', exit_code: 1, files: 0 });
    expect(failed.error).not.toContain('a-wrong-secret-9f2e');
    expect(await names(join(drop, 'inbox'))).toEqual(['A0001.jpg', 'A0002.tif', 'A0017.jpg', 'Q0001.jpg', 'notes.txt']);

    // A photo still being copied in (changed seconds ago) waits for the next run.
    await writeFiles(join(drop, 'inbox'), { 'A0020.jpg': 'the first bytes of a photo' });
    const summary = await runPipelineFile(await load(file));
    expect(summary).toMatchObject({ status: 'partial', exit_code: 3, files: 3, counts: { ok: 2, converted: 1, invalid: 2 }, moved: { done: 3, refused: 2, left: 0 } });
    const held = await photoHashes(emu());
    expect(held.get('A0001')).toBe(sha256(a1));
    expect(held.get('A0017')).toBe(sha256(a17));
    expect(await names(join(drop, 'inbox'))).toEqual(['A0020.jpg']);
    // The TIFF was sent as a JPEG; the file kept in done/ is the one dropped.
    expect(await names(join(drop, 'done'))).toEqual(['A0001 (2).jpg', 'A0001.jpg', 'A0002.tif', 'A0017.jpg']);
    expect(await readFile(join(drop, 'done', 'A0001.jpg'), 'utf8')).toBe('a photo done by an earlier run');
    expect(sha256(await readFile(join(drop, 'done', 'A0001 (2).jpg')))).toBe(sha256(a1));
    expect(await names(join(drop, 'refused'))).toEqual(['Q0001.jpg', 'Q0001.jpg.reason.txt', 'notes.txt', 'notes.txt.reason.txt']);
    expect(await readFile(join(drop, 'refused', 'Q0001.jpg.reason.txt'), 'utf8')).toContain('no member has the code Q0001');
    expect(await readFile(join(drop, 'refused', 'notes.txt.reason.txt'), 'utf8')).not.toBe('');

    // The lock beside the drop folder is gone after the run.
    expect(await names(drop)).toEqual(['done', 'inbox', 'refused']);
  });

  it('a plan reads the source and the listing and changes nothing', async () => {
    const file = await pipeline(DROPBOX.map((l) => l.replace('dropbox-test', 'plan-test')));
    const inbox = join(file, '..', 'drop', 'inbox');
    await writeFiles(inbox, { 'A0002.jpg': await plain(30, 30, 2).jpeg().toBuffer(), 'A0003.jpg': await plain(30, 30, 3).jpeg().toBuffer() });
    // Older than the drop folder's 10 seconds, which a run (and so its plan) leaves for later.
    const past = new Date(Date.now() - 60_000);
    for (const name of ['A0002.jpg', 'A0003.jpg']) await utimes(join(inbox, name), past, past);
    const before = await stats(emu());
    const photosBefore = await photoHashes(emu());
    const loaded = await load(file);
    const connection = await connectPipeline(loaded);
    try {
      const plan = await planPipeline(loaded, connection.client);
      expect(plan).toMatchObject({ direction: 'import', files: { total: 2, transfer: 2, refused: 0 } });
      expect(plan.requests.update).toBeGreaterThanOrEqual(1);
      expect(plan.requests.update).toBeLessThanOrEqual(2);
      expect(plan.limit_seconds).toBe(0);
    } finally {
      await connection.close();
    }
    const after = await stats(emu());
    expect(after.update_requests).toBe(before.update_requests);
    expect(await photoHashes(emu())).toEqual(photosBefore);
    expect(await names(inbox)).toEqual(['A0002.jpg', 'A0003.jpg']);
    expect(await names(join(inbox, '..'))).toEqual(['inbox']);
  });

  it('the service\'s photos to a zip: every photo, a zip that verifies; a plan of the same pipeline lists them all', async () => {
    const file = await pipeline(['name: zip-test', 'from: { service: photos }', 'steps:', '  - download: { concurrency: 4 }', 'to: { zip: backup/photos.zip }']);
    const zip = join(file, '..', 'backup', 'photos.zip');
    const withPhoto = [...(await photoHashes(emu())).values()].filter((h) => h !== null).length;
    const loaded = await load(file);
    const connection = await connectPipeline(loaded);
    try {
      const plan = await planPipeline(loaded, connection.client);
      expect(plan.files).toMatchObject({ total: withPhoto, transfer: withPhoto });
      expect(plan.requests.update).toBe(0);
    } finally {
      await connection.close();
    }
    const summary = await runPipelineFile(loaded);
    expect(summary).toMatchObject({ pipeline: 'zip-test', status: 'ok', exit_code: 0, files: withPhoto });
    const verified = await verifyExport(zip);
    expect(verified.problems).toEqual([]);
    expect(verified.ok).toBe(withPhoto);
    expect(await names(join(zip, '..'))).toEqual(['photos.zip']);
    // Planned again: the zip's entries are copied by the next run, none downloaded.
    const again = await connectPipeline(loaded);
    try {
      const plan = await planPipeline(loaded, again.client);
      expect(plan.files).toMatchObject({ total: withPhoto, transfer: 0, kept: withPhoto });
      expect(plan.requests.storage).toBe(0);
    } finally {
      await again.close();
    }
  });

  it('an archive: the second run links every file and its retention removes the first snapshot; the plan between them downloads nothing', async () => {
    const file = await pipeline(['name: archive-test', 'from: { service: attachments }', 'to: { archive: archive }', 'retention: { keep_last: 1 }']);
    const archive = join(file, '..', 'archive');
    const loaded = await load(file);
    const first = await runPipelineFile(loaded);
    expect(first).toMatchObject({ status: 'ok', exit_code: 0 });
    expect(first.snapshot).toMatch(/^\d{4}-\d{2}-\d{2}T\d{6}/);
    const connection = await connectPipeline(loaded);
    try {
      const plan = await planPipeline(loaded, connection.client);
      expect(plan.files.total).toBe(first.files);
      expect(plan.files).toMatchObject({ transfer: 0, kept: first.files });
      expect(plan.requests.storage).toBe(0);
    } finally {
      await connection.close();
    }
    const downloads = (await emu().control('GET', '/stats')).storage_downloads as number;
    const second = await runPipelineFile(loaded);
    expect(second).toMatchObject({ status: 'ok', removed: [first.snapshot] });
    expect((await emu().control('GET', '/stats')).storage_downloads).toBe(downloads);
    expect(await names(join(archive, 'snapshots'))).toEqual([second.snapshot]);
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(second.snapshot);
    expect((await verifyExport(join(archive, 'snapshots', second.snapshot!))).problems).toEqual([]);
  });

  it('two pipelines with one archive: validate names the second at to.archive, and its run fails leaving the other\'s snapshot as it was', async () => {
    const contracts = await pipeline(['name: contracts', 'from: { service: attachments, sheets: [1] }', 'to: { archive: archive }', 'retention: { keep_last: 1 }']);
    const archive = join(contracts, '..', 'archive');
    const quals = join(contracts, '..', 'quals.yaml');
    await writeFile(quals, (await readFile(contracts, 'utf8')).replace('name: contracts', 'name: quals').replace('sheets: [1]', 'sheets: [2]'));
    const { problems } = await validatePipelineFiles([contracts, quals], { env: { TEST_SECRET: SECRET } });
    expect(problems.map((p) => `${p.line}:${p.column}: ${p.message}`)).toEqual([expect.stringMatching(/^3:\d+: to\.archive .* is also the archive of .*pipeline\.yaml; each pipeline needs an archive of its own/)]);

    const first = await runPipelineFile(await load(contracts));
    expect(first).toMatchObject({ status: 'ok' });
    const held = await names(join(archive, 'snapshots'));
    const second = await runPipelineFile(await load(quals));
    expect(second).toMatchObject({ status: 'failed', exit_code: 1 });
    expect(second.error).toContain(`holds the snapshots of pipeline "contracts", not of "quals": each pipeline needs an archive of its own`);
    expect(second.error).not.toContain('run the export again');
    expect(await names(join(archive, 'snapshots'))).toEqual(held);
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(first.snapshot);
  });

  it('validate --online names a sheet the service lacks and the members a source names that it lacks, at their lines', async () => {
    const sheet = await pipeline(['name: online-sheet', 'from:', '  service: attachments', '  sheets: [ 999 ]', 'to: { folder: out }']);
    const drop = await pipeline(['name: online-drop', 'from: { folder: inbox }', 'to: { service: photos }']);
    // Twelve files name no member: ten are shown and the others counted.
    const unknown = await plain(20, 20, 2).jpeg().toBuffer();
    const strangers = Array.from({ length: 12 }, (_, i) => `Z04${String(i).padStart(2, '0')}`);
    await writeFiles(join(drop, '..', 'inbox'), { 'A0001.jpg': await plain(20, 20, 1).jpeg().toBuffer(), ...Object.fromEntries(strangers.map((code) => [`${code}.jpg`, unknown])) });
    const { problems } = await validatePipelineFiles([sheet, drop], { online: true, env: { TEST_SECRET: SECRET } });
    expect(problems).toEqual([
      { file: sheet, line: 4, column: 13, message: expect.stringMatching(/^there is no sheet 999; sheets with file parts: /) },
      { file: drop, line: 2, column: 7, message: `the source names members the service does not have: ${strangers.slice(0, 10).map((code) => `${code} (${code}.jpg)`).join(', ')} and 2 more` },
    ]);
    const offline = await validatePipelineFiles([sheet, drop], { env: { TEST_SECRET: SECRET } });
    expect(offline.problems).toEqual([]);
  });

  it('pipelines/photo-dropbox.yaml as shipped, its folder and service from the environment: photos sent move to done/, a photo for a member not registered yet waits in the inbox until it is', async () => {
    const drop = tempDir('wds-dropbox-');
    await writeFiles(join(drop, 'inbox'), { 'A0021.jpg': await plain(60, 80, 21).jpeg().toBuffer(), 'B9999.jpg': await plain(60, 80, 22).jpeg().toBuffer() });
    await settle(join(drop, 'inbox'));
    const env = { WDS_DROPBOX: drop, WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
    const before = (await photoHashes(emu())).get('A0021');
    const loaded = await loadPipelineFile(join(import.meta.dirname, '../../pipelines/photo-dropbox.yaml'), env);
    expect(loaded.from).toEqual({ folder: join(drop, 'inbox'), move: { done: join(drop, 'done'), refused: join(drop, 'refused') }, settle_seconds: 10 });
    const summary = await runPipelineFile(loaded, { env });
    expect(summary).toMatchObject({ pipeline: 'photo-dropbox', status: 'partial', exit_code: 3, moved: { done: 1, refused: 0, left: 1 } });
    expect((await photoHashes(emu())).get('A0021')).not.toBe(before);
    expect(await names(join(drop, 'done'))).toEqual(['A0021.jpg']);
    // It runs on member_created: the photo waits for its member rather than moving to refused/.
    expect(await names(join(drop, 'inbox'))).toEqual(['B9999.jpg']);
    expect(await names(join(drop, 'refused'))).toEqual([]);
    const registered = await emu().api('POST', '/members', { member_data: [{ code: 'B9999', name: 'Late Joiner' }] });
    expect((await emu().waitTask(registered.body.task_id)).status).toBe('OK');
    const again = await runPipelineFile(loaded, { env });
    expect(again).toMatchObject({ status: 'ok', moved: { done: 1, refused: 0, left: 0 } });
    expect((await photoHashes(emu())).has('B9999')).toBe(true);
    expect(await names(join(drop, 'done'))).toEqual(['A0021.jpg', 'B9999.jpg']);
    expect(await names(join(drop, 'inbox'))).toEqual([]);
  });
});
