/**
 * The `s3:` block's storage settings (DESIGN.md section 13), as far as the S3 server the suite runs
 * (Ceph's radosgw, no placement targets beyond STANDARD, no KMS) can show them: `storage_class:
 * STANDARD` is written on every object; a class or server-side encryption the storage does not
 * offer is refused at the first write, the run failing with a message naming the setting and
 * leaving no snapshot. And `archive repair`, which mends files of a folder, refuses an s3://
 * archive saying why. The real CLI as a child process.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../../helpers/emulator.js';
import { runCli, type CliRun } from '../../helpers/cli-process.js';
import { tempDir } from '../../helpers/export.js';
import { newBucket, s3Client, s3Server, SECRET_KEY, type S3Server } from '../../helpers/s3-server.js';

const emu = useEmulator({ generate: { members: 6, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [3000, 6000] } });
const server = await s3Server();

describe.skipIf(server === null)('storage settings of a bucket archive', { timeout: 180_000 }, () => {
  const s3 = server as S3Server;
  const cli = async (args: string[]): Promise<CliRun> => {
    const run = await runCli(args, s3.env);
    expect(run.stdout + run.stderr).not.toContain(SECRET_KEY);
    return run;
  };
  const pipeline = async (address: string, settings: string): Promise<string> => {
    const file = join(tempDir('wds-bucket-settings-'), 'p.yaml');
    await writeFile(file, [
      'name: bucket-settings',
      `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
      'from: { service: attachments }',
      `to: { archive: "${address}", s3: { force_path_style: true, ${settings} } }`,
      '',
    ].join('\n'));
    return file;
  };
  const keys = async (bucket: string, prefix: string): Promise<string[]> => {
    const client = s3Client(s3);
    try {
      return ((await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }))).Contents ?? []).map((o) => o.Key!);
    } finally {
      client.destroy();
    }
  };

  it('storage_class STANDARD is written on every object', async () => {
    const bucket = await newBucket(s3);
    const run = await cli(['run', await pipeline(`s3://${bucket}/std`, 'storage_class: STANDARD')]);
    expect(run.code, run.stderr).toBe(0);
    const data = await keys(bucket, 'std/data/');
    expect(data.length).toBeGreaterThan(0);
    const client = s3Client(s3);
    for (const key of data) expect((await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).StorageClass).toBe('STANDARD');
    client.destroy();
  });

  it.each([['storage_class: GLACIER_IR', 'storage_class GLACIER_IR'], ['sse: AES256', 'sse AES256']])('%s, which this server does not offer, fails the run naming it, and no snapshot is written', async (setting, named) => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/refused`;
    const run = await cli(['run', await pipeline(address, setting), '--json']);
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toContain(`the write asked for ${named}, which this storage may not offer`);
    expect((await keys(bucket, 'refused/')).filter((k) => k.endsWith('/snapshot.json') || k.endsWith('/latest'))).toEqual([]);
  });

  it('archive repair refuses a bucket archive, saying why', async () => {
    const repair = await cli(['archive', 'repair', 's3://some-bucket/attachments', '--base-url', emu().url]);
    expect(repair.code).toBe(2);
    expect(repair.stderr).toContain('archive repair works on folder archives only: a bucket archive\'s objects are written once');
  });
});
