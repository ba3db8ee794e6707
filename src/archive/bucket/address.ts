/**
 * Where a bucket archive lives (DESIGN.md section 13): `s3://BUCKET/PREFIX`, and how to reach it:
 * the AWS SDK's own settings (environment, profile) unless an `s3:` block or the `--s3-*` options
 * say otherwise. Object Lock (`lock:`) is part of what an archive is written with.
 */
import { z } from 'zod';

export const BUCKET_SCHEME = 's3://';

/** A bucket archive's address: the bucket and the prefix under which it keeps everything (no slash at either end). */
export interface BucketAddress {
  bucket: string;
  prefix: string;
}

export const isBucketAddress = (text: string): boolean => text.toLowerCase().startsWith(BUCKET_SCHEME);

/** S3's rules for bucket names, the ones that an address can break by mistake. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** `s3://BUCKET/PREFIX` parsed; throws a message naming the address and the rule it breaks. */
export function parseBucketAddress(text: string): BucketAddress {
  if (!isBucketAddress(text)) throw new Error(`${text} is not a bucket address: it must start with s3://`);
  const rest = text.slice(BUCKET_SCHEME.length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = (slash < 0 ? '' : rest.slice(slash + 1)).replace(/\/+$/, '');
  if (!BUCKET_NAME.test(bucket)) throw new Error(`${text}: "${bucket}" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)`);
  if (prefix !== '' && prefix.split('/').some((part) => part === '' || part === '.' || part === '..')) {
    throw new Error(`${text}: the prefix "${prefix}" has an empty, "." or ".." part`);
  }
  return { bucket, prefix };
}

export const formatBucketAddress = (a: BucketAddress): string => `${BUCKET_SCHEME}${a.bucket}${a.prefix ? `/${a.prefix}` : ''}`;

/** The `s3:` block of a pipeline's `to:`; each setting left out comes from the AWS SDK's own chain. */
export const s3SettingsSchema = z.strictObject({
  /** The S3 endpoint, for storage other than AWS's (default: AWS_ENDPOINT_URL_S3, else AWS). */
  endpoint: z.url().optional(),
  /** default: AWS_REGION or the profile's, else us-east-1. */
  region: z.string().min(1).optional(),
  /** `http://host/bucket/key` rather than `http://bucket.host/key`: most S3-compatible servers want it. */
  force_path_style: z.boolean().optional(),
  /** The storage class of the objects written (STANDARD, STANDARD_IA, GLACIER_IR...). */
  storage_class: z.string().min(1).optional(),
  /** Server-side encryption of the objects written. */
  sse: z.enum(['AES256', 'aws:kms']).optional(),
}).describe('How to reach the bucket; each setting left out comes from the AWS SDK (environment, profile)');
export type S3Settings = z.infer<typeof s3SettingsSchema>;

/** `lock:`: S3 Object Lock on every object a run writes, for `days` from its writing. */
export const objectLockSchema = z.strictObject({
  /** governance: users with a special permission may still delete; compliance: nobody may, until it lapses. */
  mode: z.enum(['governance', 'compliance']),
  /** Days each object written stays locked (retain-until), from its writing; extended while a kept snapshot names it. */
  days: z.number().int().min(1).max(36_500),
}).describe('S3 Object Lock: every object written is kept unchangeable for `days`; objects kept snapshots name are extended');
export type ObjectLock = z.infer<typeof objectLockSchema>;
