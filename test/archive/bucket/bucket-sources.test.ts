/**
 * One company per bucket archive (issue 41, for DESIGN.md section 13): a run with another
 * company's consumer key, or with no base URL, into an existing s3:// archive exits 2 with the
 * folder archive's messages and leaves every object of the bucket as it was; forget and a run's
 * retention leave another company's snapshots alone. The real CLI as a child process, a real S3
 * server, and an emulator of two companies.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../../helpers/cli-process.js';
import { useEmulator } from '../../helpers/emulator.js';
import { clientFor } from '../../helpers/client.js';
import { tempDir } from '../../helpers/export.js';
import { newBucket, s3Client, s3Server, SECRET_KEY, type S3Server } from '../../helpers/s3-server.js';
import { runExport } from '../../../src/pipelines/export.js';
import { SourceMismatchError } from '../../../src/sinks/source.js';

const dir = tempDir('wds-bucket-sources-');
const config = join(dir, 'companies.yaml');
writeFileSync(config, `companies:
  - name: alpha
    consumer_key: alpha-key
    consumer_secret: alpha-secret
    generate: { members: 12, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 8000] }
  - name: beta
    consumer_key: beta-key
    consumer_secret: beta-secret
    generate: { members: 8, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 8000] }
`);
const emu = useEmulator({ config });
const server = await s3Server();

const companyId = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 16);
const ALPHA = companyId('alpha-key');
const BETA = companyId('beta-key');

describe.skipIf(server === null)('a bucket archive holds one company', { timeout: 180_000 }, () => {
  const s3 = server as S3Server;
  const envOf = (key: string, secret: string): NodeJS.ProcessEnv => ({ ...s3.env, WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: key, WDS_CONSUMER_SECRET: secret });
  const alpha = () => envOf('alpha-key', 'alpha-secret');
  const beta = () => envOf('beta-key', 'beta-secret');
  const cli = async (args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> => {
    const run = await runCli(args, env);
    for (const secret of [SECRET_KEY, 'alpha-secret', 'beta-secret', 'beta-key']) expect(run.stdout + run.stderr).not.toContain(secret);
    return run;
  };

  /** A pipeline archiving the company's attachments into `address`, its connection from the environment. */
  function pipeline(name: string, address: string, retention = ''): string {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, `name: ${name}\nfrom: { service: attachments }\nto: { archive: "${address}", s3: { force_path_style: true } }\n${retention}`);
    return file;
  }

  /** Every object under the bucket with its ETag: the archive byte for byte. */
  async function objects(bucket: string): Promise<Record<string, string>> {
    const client = s3Client(s3);
    try {
      const out: Record<string, string> = {};
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
        for (const o of page.Contents ?? []) out[o.Key!] = o.ETag!;
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out;
    } finally {
      client.destroy();
    }
  }

  it("a second company's run, or a run with no base URL, exits 2, names both companies, and changes no object", async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/shared`;
    const file = pipeline('bucket-shared', address);
    const first = await cli(['run', file], alpha());
    expect(first.code, first.stderr).toBe(0);
    const client = s3Client(s3);
    const latest = (await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: 'shared/latest' }))).Body!.transformToString()).trim();
    const doc = JSON.parse(await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: `shared/snapshots/${latest}/snapshot.json` }))).Body!.transformToString()) as { source: unknown };
    client.destroy();
    const origin = new URL(emu().url).origin;
    expect(doc.source).toEqual({ base_url: origin, company: ALPHA });
    const before = await objects(bucket);

    const refused = await cli(['run', file, '--json'], beta());
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`to.archive ${address} holds the files of ${origin} (company ${ALPHA}), and this run connects to ${origin} (company ${BETA}), another company`);
    expect(JSON.parse(refused.stdout)).toMatchObject({ status: 'failed', exit_code: 2 });
    expect(await objects(bucket)).toEqual(before);

    // With no base URL, the run would add the embedded emulator's sample company.
    const embedded = await cli(['run', file], s3.env);
    expect(embedded.code, embedded.stderr).toBe(2);
    expect(embedded.stderr).toContain(`to.archive ${address} holds a snapshot archive, and there is no connection.base_url or WDS_BASE_URL`);
    expect(embedded.stderr).toContain('add --emulator');
    expect(await objects(bucket)).toEqual(before);

    // The SDK's runExport checks under the archive's lock: refused before a snapshot is begun.
    const saved = Object.fromEntries(Object.keys(s3.env).map((name) => [name, process.env[name]]));
    Object.assign(process.env, s3.env);
    const betaClient = clientFor(emu(), { consumerKey: 'beta-key', consumerSecret: 'beta-secret' });
    try {
      const run = runExport({ client: betaClient, what: 'attachments', out: address, archive: { pipeline: 'bucket-shared', s3: { force_path_style: true } } });
      await expect(run).rejects.toThrow(SourceMismatchError);
      await expect(run).rejects.toThrow(`${address} holds the files of ${origin} (company ${ALPHA}), and this run connects to ${origin} (company ${BETA}), another company`);
    } finally {
      await betaClient.close();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(await objects(bucket)).toEqual(before);

    // The first company's runs go on as before.
    const again = await cli(['run', file], alpha());
    expect(again.code, again.stderr).toBe(0);
  });

  it("forget and a run's retention count only the archive's own company's snapshots", async () => {
    const bucket = await newBucket(s3);
    const address = `s3://${bucket}/kept`;
    const keepAll = pipeline('bucket-retention', address);
    for (let i = 0; i < 2; i += 1) expect((await cli(['run', keepAll], alpha())).code).toBe(0);
    const listed = JSON.parse((await cli(['archive', 'list', address, '--json'], s3.env)).stdout) as { snapshots: { id: string }[] };
    const [older, newer] = listed.snapshots.map((s) => s.id);
    // The older snapshot as if another company's had come in (copied by hand).
    const client = s3Client(s3);
    const key = `kept/snapshots/${older}/snapshot.json`;
    const doc = JSON.parse(await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString()) as Record<string, unknown>;
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify({ ...doc, source: { base_url: 'https://other.example', company: BETA } }) }));
    client.destroy();

    const keepOne = pipeline('bucket-retention', address, 'retention: { keep_last: 1 }\n');
    const run = await cli(['run', keepOne], alpha());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr + run.stdout).toContain(`retention removed 1 snapshot: ${newer}`);
    const left = (JSON.parse((await cli(['archive', 'list', address, '--json'], s3.env)).stdout) as { snapshots: { id: string }[] }).snapshots.map((s) => s.id);
    expect(left).toHaveLength(2);
    expect(left[0]).toBe(older);

    const forget = await cli(['archive', 'forget', address, '--keep-last', '1', '--dry-run'], s3.env);
    expect(forget.code, forget.stderr).toBe(0);
    expect(forget.stdout).toContain(`keep    ${older}  of another company, https://other.example (company ${BETA}); not counted, left as it is`);
    expect(forget.stdout).toContain('would remove 0');
  });
});
