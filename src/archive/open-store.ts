/**
 * The store of the archive a user named (archive-store.ts): a folder, or a bucket, whose module and
 * the AWS SDK load only for an `s3://` address. Apart from archive-store.ts, which the bucket's
 * store implements, so that neither imports the other.
 */
import { FolderStore, type ArchiveStore, type BucketOptions } from './archive-store.js';
import { isBucketAddress } from './bucket/address.js';

/** The archive a user named: `s3://BUCKET/PREFIX` or a folder. */
export async function openArchiveStore(address: string, s3: BucketOptions = {}): Promise<ArchiveStore> {
  if (!isBucketAddress(address)) return new FolderStore(address);
  const { BucketStore } = await import('./bucket/store.js');
  return BucketStore.open(address, s3);
}
