/**
 * The `archive` commands on a bucket archive (DESIGN.md section 13), as a user runs them: the CLI
 * as a child process against a real S3 server (Ceph's radosgw, test/helpers/s3-server.ts), each
 * test with its own bucket. A folder archive made by two runs against the in-process emulator is
 * copied into a bucket and back; list, show, diff, check, restore and forget read and change the
 * bucket; Object Lock and the archive's lock are checked against the server.
 */
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectRetentionCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../../helpers/emulator.js';
import { useClient } from '../../helpers/client.js';
import { runCli, spawnCli, finished, type CliRun } from '../../helpers/cli-process.js';
import { tempDir } from '../../helpers/export.js';
import { verifyExport } from '../../../src/pipelines/verify.js';
import { BucketStore } from '../../../src/archive/bucket/store.js';
import { forgetBucketSnapshots } from '../../../src/archive/bucket/forget.js';
import { archiveRun, changeAttachments, deleteMember, manifestOf } from '../helpers.js';
import { newBucket, s3Client, s3Server, SECRET_KEY, type S3Server } from '../../helpers/s3-server.js';

const emu = useEmulator({ generate: { members: 30, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 20_000] } });
const api = useClient(emu);
const server = await s3Server();

const dataKey = (prefix: string, sha: string): string => `${prefix}/data/${sha.slice(0, 2)}/${sha}`;

// Each test runs several CLI children against the S3 server: slow on a loaded machine, not stuck.
describe.skipIf(server === null)('archive commands on a bucket archive', { timeout: 180_000 }, () => {
  const s3 = server as S3Server;
  const cli = async (args: string[]): Promise<CliRun> => {
    const run = await runCli(args, s3.env);
    // Credentials appear in no output of any command.
    expect(run.stdout + run.stderr).not.toContain(SECRET_KEY);
    return run;
  };
  const folder = join(tempDir('wds-bucket-cmds-'), 'archive');
  const ids: string[] = [];
  let changed: string[] = [];

  beforeAll(async () => {
    ids.push((await archiveRun(api(), folder)).snapshot!.id);
    changed = await changeAttachments(emu(), 2, 'G000003');
    await deleteMember(emu(), 'G000003');
    ids.push((await archiveRun(api(), folder)).snapshot!.id);
  }, 60_000);

  it('copy folder -> bucket -> folder round-trips; a second copy uploads nothing', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/acme/attachments`;
    const up = await cli(['archive', 'copy', folder, address, '--json']);
    expect(up.code, up.stderr).toBe(0);
    const first = JSON.parse(up.stdout);
    expect(first.copied).toEqual(ids);
    expect(first.latest).toBe(ids[1]);
    const distinct = new Set<string>();
    for (const id of ids) for (const line of (await manifestOf(join(folder, 'snapshots', id))).values()) distinct.add(line.sha256);
    expect(first.sent.files).toBe(distinct.size);
    expect(first.requests.destination.PUT).toBeGreaterThanOrEqual(distinct.size);

    const again = await cli(['archive', 'copy', folder, address, '--json']);
    expect(again.code, again.stderr).toBe(0);
    const second = JSON.parse(again.stdout);
    expect(second).toMatchObject({ copied: [], present: ids, sent: { files: 0, bytes: 0 } });
    // The lock's write and the listings only: no object, manifest or latest written.
    expect(second.requests.destination.PUT).toBe(1);

    const back = join(tempDir('wds-bucket-back-'), 'archive');
    const down = await cli(['archive', 'copy', address, back, '--json']);
    expect(down.code, down.stderr).toBe(0);
    expect(JSON.parse(down.stdout).copied).toEqual(ids);
    expect((await readdir(join(back, 'snapshots'))).sort()).toEqual(ids);
    expect((await readFile(join(back, 'latest'), 'utf8')).trim()).toBe(ids[1]);
    for (const id of ids) {
      expect(await readFile(join(back, 'snapshots', id, 'manifest.jsonl'), 'utf8')).toBe(await readFile(join(folder, 'snapshots', id, 'manifest.jsonl'), 'utf8'));
      expect((await verifyExport(join(back, 'snapshots', id))).problems).toEqual([]);
    }
    const check = await cli(['archive', 'check', back, '--read-data', '100']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });

  it('list, show, diff, check and restore work on the bucket as on a folder', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/a`;
    expect((await cli(['archive', 'copy', folder, address])).code).toBe(0);
    const list = await cli(['archive', 'list', address, '--json']);
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout);
    expect(listed.snapshots.map((s: { id: string }) => s.id)).toEqual(ids);
    expect(listed.snapshots[1]).toMatchObject({ complete: true, new: changed.length, latest: true });

    const show = await cli(['archive', 'show', address, 'latest~1']);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`snapshot ${ids[0]} (${address}/snapshots/${ids[0]})`);

    const diff = await cli(['archive', 'diff', address, `@${ids[0]}`, 'latest']);
    expect(diff.code, diff.stderr).toBe(0);
    const gone = [...(await manifestOf(join(folder, 'snapshots', ids[0]!))).values()].filter((l) => l.code === 'G000003');
    expect(diff.stdout).toContain(`0 added, ${changed.length} changed, ${gone.length} deleted`);
    for (const line of gone) expect(diff.stdout).toContain(`  - ${line.path}`);
    for (const id of changed) expect(diff.stdout).toContain(`  M attachments/${id}`);

    const out = join(tempDir('wds-bucket-restore-'), 'out');
    const restore = await cli(['archive', 'restore', address, `@${ids[0]}`, '--out', out]);
    expect(restore.code, restore.stderr).toBe(0);
    expect((await verifyExport(out)).problems).toEqual([]);
    const lines = [...(await manifestOf(join(folder, 'snapshots', ids[0]!))).values()];
    for (const line of lines) expect(createHash('sha256').update(await readFile(join(out, line.path))).digest('hex')).toBe(line.sha256);

    const ok = await cli(['archive', 'check', address, '--read-data', '100']);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/2 snapshots, \d+ files listed, \d+ files read; no problem found/);
  });

  it('check --read-data 100 finds an object whose bytes were replaced, exit 3, naming the file', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/p`;
    expect((await cli(['archive', 'copy', folder, address])).code).toBe(0);
    const line = [...(await manifestOf(join(folder, 'snapshots', ids[1]!))).values()].at(-1)!;
    const client = s3Client(s3);
    // Same size, other bytes: only reading the data finds it.
    const other = Buffer.alloc(line.size, 0x41);
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: dataKey('p', line.sha256), Body: other }));
    client.destroy();
    const structure = await cli(['archive', 'check', address]);
    expect(structure.code, structure.stdout).toBe(0);
    const data = await cli(['archive', 'check', address, '--read-data', '100']);
    expect(data.code).toBe(3);
    expect(data.stdout).toContain(`${ids[1]} ${line.path}: sha256 of object data/${line.sha256.slice(0, 2)}/${line.sha256} differs from the manifest`);
  });

  it('forget keeps every object a kept snapshot names, and deletes the others past the margin', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/f`;
    expect((await cli(['archive', 'copy', folder, address])).code).toBe(0);
    const young = await cli(['archive', 'forget', address, '--keep-last', '1', '--json']);
    expect(young.code, young.stderr).toBe(0);
    const kept = JSON.parse(young.stdout);
    expect(kept.remove.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    const onlyOld = new Set([...(await manifestOf(join(folder, 'snapshots', ids[0]!))).values()].map((l) => l.sha256));
    const latest = new Set([...(await manifestOf(join(folder, 'snapshots', ids[1]!))).values()].map((l) => l.sha256));
    for (const sha of latest) onlyOld.delete(sha);
    // Objects just written are younger than the default margin of a day: none deleted yet.
    expect(kept.objects).toMatchObject({ removed: 0, young: onlyOld.size });
    const old = await cli(['archive', 'forget', address, '--keep-last', '1', '--unused-older-than', '0s', '--json']);
    expect(old.code, old.stderr).toBe(0);
    expect(JSON.parse(old.stdout).objects).toMatchObject({ removed: onlyOld.size, young: 0 });
    const check = await cli(['archive', 'check', address, '--read-data', '100']);
    expect(check.code, check.stdout).toBe(0);
    expect(check.stdout).toContain('1 snapshots');
  });

  it('under Object Lock: retain-until at least `days` ahead for new objects, and forget deletes nothing locked, saying so', async () => {
    const bucket = await newBucket(s3, true);
    const address = `s3://${bucket}/locked`;
    const before = Date.now();
    const copy = await cli(['archive', 'copy', folder, address, '--lock-mode', 'governance', '--lock-days', '2']);
    expect(copy.code, copy.stderr).toBe(0);
    const line = [...(await manifestOf(join(folder, 'snapshots', ids[0]!))).values()][0]!;
    const client = s3Client(s3);
    const retention = await client.send(new GetObjectRetentionCommand({ Bucket: bucket, Key: dataKey('locked', line.sha256) }));
    client.destroy();
    expect(retention.Retention?.Mode).toBe('GOVERNANCE');
    expect(retention.Retention!.RetainUntilDate!.getTime()).toBeGreaterThanOrEqual(before + 2 * 86_400_000 - 1000);

    const forget = await cli(['archive', 'forget', address, '--keep-last', '1', '--unused-older-than', '0s']);
    expect(forget.code, forget.stderr).toBe(0);
    expect(forget.stdout).toMatch(new RegExp(`keep    ${ids[0]}  locked until \\S+ \\(Object Lock\\)`));
    const list = JSON.parse((await cli(['archive', 'list', address, '--json'])).stdout);
    expect(list.snapshots.map((s: { id: string }) => s.id)).toEqual(ids);
    const check = await cli(['archive', 'check', address, '--read-data', '100']);
    expect(check.code, check.stdout).toBe(0);

    // A forget a day and a half on: less than half of the 2 days left, so every object both
    // snapshots name, each once, and their own files get 2 days from then.
    const later = new Date(Date.now() + 36 * 3_600_000);
    const saved = Object.fromEntries(Object.keys(s3.env).map((name) => [name, process.env[name]]));
    Object.assign(process.env, s3.env);
    const store = BucketStore.open(address);
    try {
      const extended = await forgetBucketSnapshots(store, { keep_last: 2 }, { now: later });
      const distinct = new Set<string>();
      for (const id of ids) for (const l of (await manifestOf(join(folder, 'snapshots', id))).values()) distinct.add(l.sha256);
      expect(extended.extended).toEqual({ objects: distinct.size, snapshots: ids });
      const again = s3Client(s3);
      const moved = await again.send(new GetObjectRetentionCommand({ Bucket: bucket, Key: dataKey('locked', line.sha256) }));
      again.destroy();
      expect(moved.Retention!.RetainUntilDate!.getTime()).toBeGreaterThanOrEqual(later.getTime() + 2 * 86_400_000 - 1000);
    } finally {
      store.close();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('forget keeps a snapshot a restore is reading, with its objects; the next forget removes it', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/read`;
    expect((await cli(['archive', 'copy', folder, address])).code).toBe(0);
    const out = join(tempDir('wds-bucket-reading-'), 'out');
    const restore = spawnCli(['archive', 'restore', address, `@${ids[0]}`, '--out', out], s3.env);
    const restored = finished(restore);
    // The restore's mark appears once it has marked the snapshot as read.
    const client = s3Client(s3);
    const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    let marks = 0;
    for (let i = 0; i < 800 && marks === 0; i += 1) {
      marks = (await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `read/readers/${ids[0]}/` }))).KeyCount ?? 0;
      if (marks === 0) await new Promise((r) => setTimeout(r, 25));
    }
    client.destroy();
    expect(marks).toBe(1);
    // Stopped while it reads, so that the forget finds it reading.
    restore.kill('SIGSTOP');
    const forget = await cli(['archive', 'forget', address, '--keep-last', '1', '--unused-older-than', '0s', '--json']);
    restore.kill('SIGCONT');
    expect(forget.code, forget.stderr).toBe(0);
    const kept = JSON.parse(forget.stdout);
    expect(kept.remove).toEqual([]);
    expect(kept.keep.find((k: { id: string }) => k.id === ids[0]).reasons[0]).toMatch(new RegExp(`^being read \\(pid ${restore.pid} on `));
    expect(kept.objects.removed).toBe(0);
    const done = await restored;
    expect(done.code, done.stderr).toBe(0);
    expect((await verifyExport(out)).problems).toEqual([]);

    const again = await cli(['archive', 'forget', address, '--keep-last', '1', '--unused-older-than', '0s', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).remove.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    const check = await cli(['archive', 'check', address, '--read-data', '100']);
    expect(check.code, check.stdout).toBe(0);
  });

  it('a second writer of one bucket archive refuses at once, naming the one that holds it', async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/two`;
    const holder = spawnCli(['archive', 'copy', folder, address], s3.env);
    const held = finished(holder);
    // The holder's lock object appears once it has taken the lock.
    const client = s3Client(s3);
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    let text = '';
    for (let i = 0; i < 400 && !text; i += 1) {
      text = await client.send(new GetObjectCommand({ Bucket: bucket, Key: 'two/locks/archive' })).then((a) => a.Body!.transformToString(), () => '');
      if (!text) await new Promise((r) => setTimeout(r, 25));
    }
    client.destroy();
    expect(text).toContain(`"pid":${holder.pid}`);
    // Stopped while it holds the lock, so that it cannot end before the second writer asks.
    holder.kill('SIGSTOP');
    const second = await cli(['archive', 'forget', address, '--keep-last', '1']);
    holder.kill('SIGCONT');
    const first = await held;
    expect(first.code, first.stderr).toBe(0);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`${address} is being written by another run: pid ${holder.pid}`);
    expect(second.stderr).toContain(`lock file ${address}/locks/archive`);
  });
});
