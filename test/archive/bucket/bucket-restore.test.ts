/**
 * Restore from a bucket archive (issue 43, Done when; DESIGN.md sections 10 and 13): a company's
 * attachments archived into a bucket by `wds-files run`, restored by `archive restore` (each file
 * checked against its manifest line as it comes out of its object), then imported by `attachments
 * import` into a company with the same members and no files, give every file back in its record,
 * byte for byte. Two members hold one content, stored once in the bucket and restored to both. The
 * real CLI as a child process, a real S3 server, and two in-process emulators.
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../../helpers/emulator.js';
import { runCli, type CliRun } from '../../helpers/cli-process.js';
import { state, tempDir, type StateAttachment } from '../../helpers/export.js';
import { addRecordWithFile, QUALIFICATIONS } from '../../import/attachment-helpers.js';
import { manifestOf } from '../helpers.js';
import { newBucket, s3Client, s3Server, SECRET_KEY, type S3Server } from '../../helpers/s3-server.js';

const MEMBERS = 40;
const source = useEmulator({ generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [1, 3], attachment_bytes: [3000, 30_000] } });
const target = useEmulator({ generate: { members: MEMBERS, files: false } });
const server = await s3Server();

/** Every attachment of a company as `/_emulator/state` has it, but for when it was stored: its place, name, size and sha256. */
async function attachments(emu: typeof source): Promise<Omit<StateAttachment, 'updated_at'>[]> {
  return (await state(emu())).attachments
    .map(({ updated_at: _stored, ...rest }) => rest)
    .sort((a, b) => a.sheet_id - b.sheet_id || a.custom_field_id - b.custom_field_id || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0) || a.record_index - b.record_index);
}

describe.skipIf(server === null)('restore from a bucket archive', { timeout: 240_000 }, () => {
  const s3 = server as S3Server;
  const cli = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> => {
    const run = await runCli(args, { ...s3.env, ...env });
    expect(run.stdout + run.stderr).not.toContain(SECRET_KEY);
    return run;
  };

  it('archive restore then attachments import into an empty company gives every file back, byte for byte', async () => {
    // One content held by two members: a single object in the bucket, two files restored.
    const memo = Buffer.from('Medical check 2026: fit for work.\n'.repeat(200));
    addRecordWithFile(source(), QUALIFICATIONS, 'G000002', 'memo.txt', memo);
    addRecordWithFile(source(), QUALIFICATIONS, 'G000005', 'memo.txt', memo);
    const original = await attachments(source);
    expect(original.filter((a) => a.file_name === 'memo.txt')).toHaveLength(2);
    expect(await attachments(target)).toEqual([]);

    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/acme/attachments`;
    const dir = tempDir('wds-bucket-restore-');
    const pipeline = join(dir, 'offsite.yaml');
    await writeFile(pipeline, [
      'name: offsite',
      `connection: { base_url: "${source().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
      'from: { service: attachments }',
      `to: { archive: "${address}", s3: { force_path_style: true } }`,
      '',
    ].join('\n'));
    const run = await cli(['run', pipeline]);
    expect(run.code, run.stderr).toBe(0);
    const client = s3Client(s3);
    const objects = (await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'acme/attachments/data/' }))).KeyCount;
    client.destroy();
    expect(objects).toBe(new Set(original.map((a) => a.sha256)).size);
    expect(objects).toBe(original.length - 1);

    // `plan` reads the bucket archive's latest snapshot: nothing would be downloaded again.
    const plan = await cli(['plan', pipeline, '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({ files: { total: original.length, transfer: 0, kept: original.length } });

    const out = join(dir, 'restored');
    const restore = await cli(['archive', 'restore', address, 'latest', '--out', out]);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout + restore.stderr).toMatch(/snapshot \S+ restored to /);
    const verify = await cli(['verify', out]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    // Each restored file is the original's bytes: its sha256 and size are the service's.
    const lines = [...(await manifestOf(out)).values()];
    expect(lines).toHaveLength(original.length);
    for (const line of lines) {
      const bytes = await readFile(join(out, line.path));
      const at = original.find((a) => a.code === line.code && a.sheet_id === line.sheet_id && a.custom_field_id === line.custom_field_id && a.record_index === line.record_index)!;
      expect({ size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }).toEqual({ size: at.size, sha256: at.sha256 });
    }

    const imported = await cli(['attachments', 'import', out, '--base-url', target().url, '--consumer-key', KEY, '--consumer-secret', SECRET]);
    expect(imported.code, imported.stdout + imported.stderr).toBe(0);
    expect(await attachments(target)).toEqual(original);
  });
});
