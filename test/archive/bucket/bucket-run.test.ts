/**
 * Archive runs into a bucket (DESIGN.md section 13) against a real S3 server and the in-process
 * emulator: a full run uploads every distinct content once; an unchanged run downloads nothing and
 * uploads no object; after a few files change and a member is deleted, exactly the changed files
 * are downloaded and uploaded, and `archive diff` (the CLI) names them and the deleted member's.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../../helpers/emulator.js';
import { useClient } from '../../helpers/client.js';
import { runCli } from '../../helpers/cli-process.js';
import { runExport } from '../../../src/pipelines/export.js';
import { changeAttachments, deleteMember, resetStats, storageDownloads } from '../helpers.js';
import { newBucket, s3Server, SECRET_KEY, type S3Server } from '../../helpers/s3-server.js';

const emu = useEmulator({ generate: { members: 100, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 20_000] } });
const api = useClient(emu);
const server = await s3Server();

describe.skipIf(server === null)('archive runs into a bucket', { timeout: 180_000 }, () => {
  const s3 = server as S3Server;
  it('full, unchanged and changed runs: only new and changed files are downloaded and uploaded', async () => {
    Object.assign(process.env, s3.env);
    const address = `s3://${await newBucket(s3)}/acme/attachments`;
    const run = () => runExport({ client: api(), what: 'attachments', out: address, archive: { pipeline: 'bucket-test', s3: { force_path_style: true } }, concurrency: 8 });
    await resetStats(emu());
    const full = await run();
    expect(full.snapshot).toMatchObject({ complete: true });
    const files = full.snapshot!.counts.files;
    expect(await storageDownloads(emu())).toBe(files);
    expect(full.report.notes.join('\n')).toMatch(new RegExp(`(\\d+) objects uploaded`));

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
  });
});
