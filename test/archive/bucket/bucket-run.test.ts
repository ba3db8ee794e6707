/**
 * Archive runs into a bucket (DESIGN.md section 13) against a real S3 server and the in-process
 * emulator: a full run uploads every distinct content once; an unchanged run downloads nothing and
 * uploads no object; after a few files change and a member is deleted, exactly the changed files
 * are downloaded and uploaded, and `archive diff` (the CLI) names them and the deleted member's.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../../helpers/emulator.js';
import { tempDir } from '../../helpers/export.js';
import { useClient } from '../../helpers/client.js';
import { finished, runCli, spawnCli } from '../../helpers/cli-process.js';
import { runExport } from '../../../src/pipelines/export.js';
import { changeAttachments, deleteMember, resetStats, storageDownloads } from '../helpers.js';
import { newBucket, s3Client, s3Server, SECRET_KEY, type S3Server } from '../../helpers/s3-server.js';

const emu = useEmulator({ generate: { members: 100, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 20_000] } });
const api = useClient(emu);
const server = await s3Server();

describe.skipIf(server === null)('archive runs into a bucket', { timeout: 180_000 }, () => {
  const s3 = server as S3Server;
  it('full, unchanged and changed runs: only new and changed files are downloaded and uploaded', async () => {
    // The SDK's own variables, as a user sets them; put back after, for the worker's other files.
    const saved = Object.fromEntries(Object.keys(s3.env).map((name) => [name, process.env[name]]));
    Object.assign(process.env, s3.env);
    try {
      await fullUnchangedChanged();
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  async function fullUnchangedChanged(): Promise<void> {
    const address = `s3://${await newBucket(s3)}/acme/attachments`;
    const run = () => runExport({ client: api(), what: 'attachments', out: address, archive: { pipeline: 'bucket-test', s3: { force_path_style: true } }, concurrency: 8 });
    await resetStats(emu());
    const full = await run();
    expect(full.snapshot).toMatchObject({ complete: true });
    const files = full.snapshot!.counts.files;
    expect(await storageDownloads(emu())).toBe(files);
    expect(full.report.notes.join('\n')).toMatch(new RegExp(`(\\d+) objects uploaded`));
    // An upload costs one PUT and no read of the archive's lock: the reads are the lock's own, the
    // previous snapshot's and the few before the snapshot is written.
    const fullNote = full.report.notes.join('\n');
    const uploads = Number(/(\d+) objects uploaded/.exec(fullNote)![1]);
    expect(uploads).toBeGreaterThan(50);
    expect(Number(/GET (\d+)/.exec(fullNote)![1])).toBeLessThanOrEqual(10);

    await resetStats(emu());
    const same = await run();
    expect(same.snapshot!.counts).toMatchObject({ files, unchanged: files, new: 0, changed: 0, deleted: 0 });
    expect(await storageDownloads(emu())).toBe(0);
    const note = same.report.notes.join('\n');
    expect(note).toContain('0 objects uploaded (0 bytes)');
    // The lock's write, started.json, the manifest, snapshot.json and latest: no object of data/.
    const puts = Number(/PUT (\d+)/.exec(note)![1]);
    expect(puts).toBe(5);
    const total = [...note.matchAll(/(?:GET|PUT|HEAD|LIST|DELETE|RETENTION) (\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
    expect(total).toBeLessThanOrEqual(20);

    const changed = await changeAttachments(emu(), 2, 'G000003');
    await deleteMember(emu(), 'G000003');
    await resetStats(emu());
    const after = await run();
    expect(after.snapshot!.counts).toMatchObject({ changed: changed.length, new: 0 });
    expect(after.snapshot!.counts.deleted).toBeGreaterThan(0);
    expect(await storageDownloads(emu())).toBe(changed.length);
    expect(after.report.notes.join('\n')).toContain(`${changed.length} objects uploaded`);

    const diff = await runCli(['archive', 'diff', address, 'latest~1', 'latest'], s3.env);
    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout + diff.stderr).not.toContain(SECRET_KEY);
    expect(diff.stdout).toContain('member G000003');
    for (const id of changed) expect(diff.stdout).toContain(`  M attachments/${id}`);
    const check = await runCli(['archive', 'check', address, '--read-data', '100'], s3.env);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  }

  it('wds-files run SIGKILLed mid-upload leaves no snapshot and latest as it was; the rerun uploads only what is missing', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/kill`;
    const dir = tempDir('wds-bucket-kill-');
    const file = join(dir, 'bucket.yaml');
    await writeFile(file, [
      'name: bucket-kill',
      `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
      'from: { service: attachments }',
      'steps:',
      '  - download: { concurrency: 2 }',
      `to: { archive: "${address}", s3: { force_path_style: true } }`,
      '',
    ].join('\n'));
    const first = await runCli(['run', file, '--json'], s3.env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout + first.stderr).not.toContain(SECRET_KEY);
    const listed = async () => JSON.parse((await runCli(['archive', 'list', address, '--json'], s3.env)).stdout) as { latest: string; snapshots: { id: string }[] };
    const before = await listed();
    const client = s3Client(s3);
    const objects = async () => (await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'kill/data/' }))).KeyCount ?? 0;
    const held = await objects();

    const changed = await changeAttachments(emu(), 40);
    await emu().control('POST', '/faults', { storage: { latency_ms: 80 } });
    const child = spawnCli(['run', file], s3.env);
    const ended = finished(child);
    let uploaded = 0;
    for (let i = 0; i < 800 && uploaded < 4; i += 1) {
      await sleep(25);
      uploaded = (await objects()) - held;
    }
    child.kill('SIGKILL');
    const killed = await ended;
    await emu().control('DELETE', '/faults');
    expect(killed.signal).toBe('SIGKILL');
    const present = (await objects()) - held;
    expect(present).toBeGreaterThanOrEqual(4);
    expect(present).toBeLessThan(changed.length);
    const after = await listed();
    expect(after.snapshots.map((x) => x.id)).toEqual(before.snapshots.map((x) => x.id));
    expect(after.latest).toBe(before.latest);

    await resetStats(emu());
    const rerun = await runCli(['run', file, '--json'], s3.env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout + rerun.stderr).toContain(`${changed.length - present} objects uploaded`);
    expect((await objects()) - held).toBe(changed.length);
    client.destroy();
    const done = await listed();
    expect(done.snapshots).toHaveLength(2);
    expect(done.latest).toBe(done.snapshots[1]!.id);
    const check = await runCli(['archive', 'check', address, '--read-data', '100'], s3.env);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });

  it('two runs into one bucket archive at once: the second refuses, naming the first', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/two`;
    const dir = tempDir('wds-bucket-two-');
    const file = join(dir, 'two.yaml');
    await writeFile(file, [
      'name: bucket-two',
      `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
      'from: { service: attachments }',
      `to: { archive: "${address}" }`,
      '',
    ].join('\n'));
    const client = s3Client(s3);
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    const first = spawnCli(['run', file], s3.env);
    const firstDone = finished(first);
    let text = '';
    for (let i = 0; i < 800 && !text; i += 1) {
      text = await client.send(new GetObjectCommand({ Bucket: bucket, Key: 'two/locks/archive' })).then((a) => a.Body!.transformToString(), () => '');
      if (!text) await sleep(25);
    }
    client.destroy();
    expect(text).toContain(`"pid":${first.pid}`);
    // Stopped while it holds the lock, so that it cannot end before the second run asks.
    first.kill('SIGSTOP');
    const second = await runCli(['run', file], s3.env);
    first.kill('SIGCONT');
    const one = await firstDone;
    expect(one.code, one.stderr).toBe(0);
    expect(second.code).not.toBe(0);
    expect(second.stdout + second.stderr).toContain(`another run holds ${address}/locks/archive (pid ${first.pid}`);
    expect(second.stdout + second.stderr).not.toContain(SECRET_KEY);
  });
});
