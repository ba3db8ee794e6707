/**
 * `wds-files run` as a child process: the exit codes of the other commands (1 for a failed run,
 * 3 when files were refused, 130 for Ctrl-C, 0), the run summary POSTed to a local receiver when
 * `notify.on` asks (never the secret), a receiver that is down only logged, and a dry run that
 * sends nothing, moves nothing and notifies no one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyExport } from '../../src/pipelines/verify.js';
import { useEmulator } from '../helpers/emulator.js';
import { finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, plain, stats, writeFiles } from '../import/photo-helpers.js';

const KEY = 'pipeline-cli-key';
const SECRET = 'pipeline-cli-secret-0b7a93';
const WRONG = 'pipeline-cli-wrong-secret-41c2';
const emu = useEmulator({ seed: 'samples/company', consumerKey: KEY, consumerSecret: SECRET, limits: { updatesPerMinute: 10000 } });

interface Received {
  path: string;
  type: string | undefined;
  body: Record<string, unknown>;
  text: string;
}
const received: Received[] = [];
let receiver: Server;
let receiverUrl: string;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', type: req.headers['content-type'], body: JSON.parse(text) as Record<string, unknown>, text });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/wds-7f3a`;
});
afterAll(async () => {
  await new Promise((done) => receiver.close(done));
});

async function pipeline(lines: string[]): Promise<string> {
  const file = join(tempDir('wds-pipeline-cli-'), 'pipeline.yaml');
  await writeFile(file, [...lines, 'connection:', `  base_url: ${emu().url}`, `  consumer_key: ${KEY}`, '  consumer_secret: ${TEST_SECRET}', ''].join('\n'));
  return file;
}

const run = (args: string[], secret = SECRET) => runCli(['run', ...args], { TEST_SECRET: secret });

describe('wds-files run', () => {
  it('a failed run exits 1 and POSTs its summary to notify.url, with no secret anywhere', async () => {
    const file = await pipeline(['name: failing-export', 'from: { service: photos }', 'to: { folder: out }', `notify: { url: "${receiverUrl}", on: [failure] }`]);
    const before = received.length;
    const result = await run([file], WRONG);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/wds-files: .*(401|credentials|refused)/i);
    expect(received.length).toBe(before + 1);
    const note = received.at(-1)!;
    expect(note.path).toBe('/hooks/wds-7f3a');
    expect(note.type).toBe('application/json');
    expect(note.body).toMatchObject({ event: 'failure', pipeline: 'failing-export', status: 'failed', exit_code: 1, files: 0 });
    expect(note.body.error).toEqual(expect.any(String));
    for (const text of [note.text, result.stdout, result.stderr]) expect(text).not.toContain(WRONG);
  });

  it('an archive run whose client cannot be made exits 1 and leaves the archive as it was: no .partial, nothing of what it began placing', async () => {
    const file = await pipeline(['name: archive-unconnected', 'from: { service: attachments }', 'to: { archive: archive }']);
    const archive = join(file, '..', 'archive');
    const first = await run([file, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const snapshot = (JSON.parse(first.stdout) as { snapshot: string }).snapshot;
    // The snapshot starts placing the earlier files as soon as the lock is held, before the client
    // is made; the process ends only once its threads are done.
    const failed = await runCli(['run', file], { TEST_SECRET: SECRET, WDS_CLIENT_LIMITS: 'no such limits' });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('WDS_CLIENT_LIMITS');
    expect(await readdir(join(archive, 'snapshots'))).toEqual([snapshot]);
    expect((await verifyExport(join(archive, 'snapshots', snapshot))).problems).toEqual([]);
  });

  it('a drop folder with a refused photo: a dry run changes nothing and tells no one; the run exits 3, moves the files and notifies the partial run', async () => {
    const file = await pipeline([
      'name: cli-dropbox',
      'from: { folder: inbox, move: { done: done, refused: refused }, settle_seconds: 0 }',
      'steps:',
      '  - submit: { trim: false }',
      'to: { service: photos }',
      `notify: { url: "${receiverUrl}", on: [partial] }`,
    ]);
    const dir = join(file, '..');
    await writeFiles(join(dir, 'inbox'), { 'A0005.jpg': await plain(40, 40, 5).jpeg().toBuffer(), 'Q0009.jpg': await plain(40, 40, 9).jpeg().toBuffer() });
    const before = received.length;
    const photos = await photoHashes(emu());
    const updates = (await stats(emu())).update_requests;

    const dry = await run([file, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(3);
    expect(await photoHashes(emu())).toEqual(photos);
    expect((await readdir(dir)).sort()).toEqual(['inbox', 'pipeline.yaml']);
    expect(received.length).toBe(before);

    const result = await run([file, '--json']);
    expect(result.code, result.stderr).toBe(3);
    const summary = JSON.parse(result.stdout.trim()) as Record<string, unknown>;
    expect(summary).toMatchObject({ pipeline: 'cli-dropbox', status: 'partial', exit_code: 3, files: 1, counts: { ok: 1, invalid: 1 }, moved: { done: 1, refused: 1, left: 0 } });
    expect((await stats(emu())).update_requests).toBeGreaterThan(updates);
    expect(await readdir(join(dir, 'done'))).toEqual(['A0005.jpg']);
    expect((await readdir(join(dir, 'refused'))).sort()).toEqual(['Q0009.jpg', 'Q0009.jpg.reason.txt']);
    expect(received.length).toBe(before + 1);
    expect(received.at(-1)!.body).toMatchObject({ event: 'partial', pipeline: 'cli-dropbox', status: 'partial', counts: { invalid: 1 } });
  });

  it('an archive run writes each file to --report when asked, and the same counts without it', async () => {
    const file = await pipeline(['name: cli-archive-report', 'from: { service: attachments }', 'to: { archive: archive }']);
    const first = await run([file, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const summary = JSON.parse(first.stdout) as { counts: Record<string, number>; files: number };
    expect(summary.counts.ok).toBeGreaterThan(0);
    const reportFile = join(file, '..', 'report.json');
    const second = await run([file, '--json', '--report', reportFile]);
    expect(second.code, second.stderr).toBe(0);
    const counts = (JSON.parse(second.stdout) as { counts: Record<string, number> }).counts;
    // Nothing changed: every file of the first run is taken over, and the report names each.
    expect(counts.skipped).toBe(summary.counts.ok);
    const report = JSON.parse(await readFile(reportFile, 'utf8')) as { items: { outcome: string; reason: string }[] };
    expect(report.items).toHaveLength(summary.counts.ok!);
    expect(report.items.every((item) => item.outcome === 'skipped' && item.reason.startsWith('unchanged since snapshot'))).toBe(true);
  });

  it('a run that succeeds exits 0 even when its receiver is down, saying the notification was not sent', async () => {
    const file = await pipeline(['name: cli-zip', 'from: { service: photos }', 'to: { zip: backup/photos.zip }', 'notify: { url: "http://127.0.0.1:9/down", on: [success, failure] }']);
    const result = await run([file]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('cli-zip: the notification to http://127.0.0.1:9 could not be sent');
    expect(result.stdout).toMatch(/photos export: \d+ ok/);
    expect((await verifyExport(join(file, '..', 'backup', 'photos.zip'))).problems).toEqual([]);
  });

  it('a second run of a running pipeline refuses (exit 1); Ctrl-C stops a run as it stops an export: exit 130 with the summary line, and the rerun completes', async () => {
    const file = await pipeline(['name: cli-stopped', 'from: { service: photos }', 'steps:', '  - download: { concurrency: 1 }', 'to: { folder: out }']);
    const out = join(file, '..', 'out');
    await emu().control('POST', '/faults', { storage: { latency_ms: 300 } });
    try {
      const child = spawnCli(['run', file], { TEST_SECRET: SECRET });
      const done = finished(child);
      let ended = false;
      void done.then(() => (ended = true));
      while (!ended && !(await readdir(join(out, 'photos')).catch(() => [])).length) await new Promise((r) => setTimeout(r, 20));
      // One writer per target: a second run of the pipeline meanwhile refuses at once, naming the first.
      const second = await run([file]);
      expect(second.code, second.stderr).toBe(1);
      expect(second.stderr).toContain(`cli-stopped: another run holds ${join(out, '.wds-lock')} (pid ${child.pid} on `);
      child.kill('SIGINT');
      const stopped = await done;
      expect(stopped.code, stopped.stderr).toBe(130);
      expect(stopped.stdout).toMatch(/interrupted: \d+ of \d+ done; run it again to continue \(stopped by SIGINT\)/);
    } finally {
      await emu().control('DELETE', '/faults');
    }
    const rerun = await run([file]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect((await verifyExport(out)).problems).toEqual([]);
  });
});
