/**
 * The S3 requests a bucket archive makes, through `@aws-sdk/client-s3`, counted by kind (what
 * `bench/archive.ts --store s3` and the run's report print). Retries are the SDK's own (standard
 * mode: 500s, 503 SlowDown and cut connections, with backoff); the SDK signs requests itself, and
 * nothing here puts a credential into a message.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, ListObjectVersionsCommand, PutObjectCommand,
  PutObjectRetentionCommand, S3Client, type ObjectLockMode, type PutObjectCommandInput,
} from '@aws-sdk/client-s3';
import type { BucketAddress, ObjectLock, S3Settings } from './address.js';

/** Attempts of one request before its error is the run's: S3 asks clients to back off on 503 SlowDown. */
const MAX_ATTEMPTS = 8;

/** One object of a listing. */
export interface Listed {
  /** The key below the archive's prefix. */
  name: string;
  size: number;
  modified: Date;
}

export type RequestKind = 'GET' | 'PUT' | 'HEAD' | 'LIST' | 'DELETE' | 'RETENTION';

/** A request the bucket refused or that failed after its retries: the message names the bucket and key, never a credential. */
export class BucketError extends Error {
  override readonly name = 'BucketError';
  constructor(readonly where: string, readonly status: number | undefined, readonly code: string, cause: unknown, hint = '') {
    super(`${where}: ${code}${status ? ` (HTTP ${status})` : ''}${hint}`, { cause });
  }
}

/** Tries of a write from a file (putFile): the SDK does not send a stream again itself. */
const PUT_FILE_TRIES = 3;
const statusOf = (error: unknown): number | undefined => (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
const codeOf = (error: unknown): string => (error as { name?: string; Code?: string }).Code ?? (error as Error).name ?? 'Error';

/** The variables the SDK's chain reads for an S3 client: a client made under others is not reused. */
const CLIENT_ENV = ['AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL', 'AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'];

/**
 * One S3 client per process for each way of reaching storage, shared by every bucket archive
 * opened with it: its keep-alive connections and resolved credentials serve the next run too (a
 * fleet worker's runs opened a client, and so new connections, for each store, about 19 a run).
 * Idle connections do not keep the process alive (Node's agent unrefs them).
 */
const clients = new Map<string, S3Client>();

function sharedClient(settings: S3Settings): S3Client {
  // The SDK warns on Node 20 that its releases of 2027 will need Node 22; package-lock.json pins
  // one that runs on Node 20, so the warning would only clutter every command's output.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const region = settings.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  const key = JSON.stringify([settings.endpoint, region, settings.force_path_style, CLIENT_ENV.map((name) => process.env[name])]);
  let client = clients.get(key);
  if (!client) {
    client = new S3Client({
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      // An S3 client needs a region even where the storage has none (most S3-compatible servers).
      ...(region ? { region } : { region: 'us-east-1' }),
      ...(settings.force_path_style !== undefined ? { forcePathStyle: settings.force_path_style } : {}),
      maxAttempts: MAX_ATTEMPTS,
      // Content-MD5 is what every S3-compatible server checks; the newer trailing checksums are not.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    clients.set(key, client);
  }
  return client;
}

/** The attempts a request took (the SDK's retries), from its answer or its error. */
const attemptsOf = (answer: unknown): number => (answer as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts ?? 1;

export class Bucket {
  readonly client: S3Client;
  /** Requests sent, by kind, retries included. */
  readonly requests: Record<RequestKind, number> = { GET: 0, PUT: 0, HEAD: 0, LIST: 0, DELETE: 0, RETENTION: 0 };
  /** Bytes uploaded in object bodies. */
  uploadedBytes = 0;

  constructor(readonly address: BucketAddress, settings: S3Settings = {}) {
    this.client = sharedClient(settings);
    this.storage = { ...(settings.storage_class ? { StorageClass: settings.storage_class as PutObjectCommandInput['StorageClass'] } : {}), ...(settings.sse ? { ServerSideEncryption: settings.sse } : {}) };
  }

  /** One request through the shared client, each of its attempts counted as `kind`. */
  private async call<T>(kind: RequestKind, request: () => Promise<T>): Promise<T> {
    try {
      const answer = await request();
      this.requests[kind] += attemptsOf(answer);
      return answer;
    } catch (error) {
      this.requests[kind] += attemptsOf(error);
      throw error;
    }
  }

  private readonly storage: Pick<PutObjectCommandInput, 'StorageClass' | 'ServerSideEncryption'>;

  /** The key of `name` under the archive's prefix. */
  key(name: string): string {
    return this.address.prefix ? `${this.address.prefix}/${name}` : name;
  }

  where(name: string): string {
    return `s3://${this.address.bucket}/${this.key(name)}`;
  }

  private async send<T>(name: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      throw new BucketError(this.where(name), statusOf(error), codeOf(error), error);
    }
  }

  /** The object's bytes, or null when there is none. */
  async get(name: string): Promise<Buffer | null> {
    return (await this.getWithTime(name))?.bytes ?? null;
  }

  /** The object's bytes and when it was last written, or null when there is none. */
  async getWithTime(name: string): Promise<{ bytes: Buffer; modified: Date } | null> {
    try {
      const answer = await this.call('GET', () => this.client.send(new GetObjectCommand({ Bucket: this.address.bucket, Key: this.key(name) })));
      return { bytes: Buffer.from(await answer.Body!.transformToByteArray()), modified: answer.LastModified ?? new Date(0) };
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw new BucketError(this.where(name), statusOf(error), codeOf(error), error);
    }
  }

  /**
   * Writes the object's bytes to `file` as they arrive, never holding them whole (a manifest of
   * 200,000 lines is 60 MB); false when there is none.
   */
  async getToFile(name: string, file: string): Promise<boolean> {
    try {
      const answer = await this.call('GET', () => this.client.send(new GetObjectCommand({ Bucket: this.address.bucket, Key: this.key(name) })));
      await pipeline(answer.Body as Readable, createWriteStream(file));
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw new BucketError(this.where(name), statusOf(error), codeOf(error), error);
    }
  }

  /** The object's size and Object Lock retain-until, or null when there is none. */
  async head(name: string): Promise<{ size: number; modified: Date; retainUntil: Date | null } | null> {
    try {
      const answer = await this.call('HEAD', () => this.client.send(new HeadObjectCommand({ Bucket: this.address.bucket, Key: this.key(name) })));
      return { size: answer.ContentLength ?? 0, modified: answer.LastModified ?? new Date(0), retainUntil: answer.ObjectLockRetainUntilDate ?? null };
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw new BucketError(this.where(name), statusOf(error), codeOf(error), error);
    }
  }

  /**
   * Writes `name` with its Content-MD5 (the server refuses bytes that arrive otherwise), and the
   * retain-until of `lock`. With `ifAbsent`, only where no object of that name exists: answers
   * false when one did (HTTP 412), and nothing was written.
   */
  async put(name: string, body: Buffer | string, options: { ifAbsent?: boolean; lock?: ObjectLock; contentType?: string } = {}): Promise<boolean> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    try {
      await this.call('PUT', () => this.client.send(new PutObjectCommand({
        Bucket: this.address.bucket, Key: this.key(name), Body: bytes, ContentLength: bytes.length,
        ContentMD5: createHash('md5').update(bytes).digest('base64'),
        ...(options.contentType ? { ContentType: options.contentType } : {}),
        ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
        ...(options.lock ? { ObjectLockMode: lockMode(options.lock), ObjectLockRetainUntilDate: retainUntil(options.lock) } : {}),
        ...this.storage,
      })));
      this.uploadedBytes += bytes.length;
      return true;
    } catch (error) {
      if (options.ifAbsent && statusOf(error) === 412) return false;
      throw new BucketError(this.where(name), statusOf(error), codeOf(error), error, statusOf(error) === 400 ? this.storageHint() : '');
    }
  }

  /**
   * Writes `name` from the file at `path`, read as it is sent rather than held (a manifest of
   * 200,000 lines is 60 MB), with its Content-MD5 and the retain-until of `lock`. The SDK does not
   * send a stream again, so a failure the server may not repeat (no answer, 429, 5xx) is tried
   * again here, up to PUT_FILE_TRIES times, each from the file's start.
   */
  async putFile(name: string, path: string, options: { lock?: ObjectLock; contentType?: string } = {}): Promise<void> {
    const md5 = createHash('md5');
    let size = 0;
    for await (const chunk of createReadStream(path)) {
      md5.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    const digest = md5.digest('base64');
    for (let attempt = 1; ; attempt += 1) {
      const body = createReadStream(path);
      try {
        await this.call('PUT', () => this.client.send(new PutObjectCommand({
          Bucket: this.address.bucket, Key: this.key(name), Body: body, ContentLength: size, ContentMD5: digest,
          ...(options.contentType ? { ContentType: options.contentType } : {}),
          ...(options.lock ? { ObjectLockMode: lockMode(options.lock), ObjectLockRetainUntilDate: retainUntil(options.lock) } : {}),
          ...this.storage,
        })));
        this.uploadedBytes += size;
        return;
      } catch (error) {
        const status = statusOf(error);
        if (attempt < PUT_FILE_TRIES && (status === undefined || status === 429 || status >= 500)) {
          await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
          continue;
        }
        throw new BucketError(this.where(name), status, codeOf(error), error, status === 400 ? this.storageHint() : '');
      } finally {
        body.destroy();
      }
    }
  }

  /** The storage settings a write carried, named in its refusal: a server without that class or encryption refuses every write. */
  private storageHint(): string {
    const asked = [
      ...(this.storage.StorageClass ? [`storage_class ${this.storage.StorageClass}`] : []),
      ...(this.storage.ServerSideEncryption ? [`sse ${this.storage.ServerSideEncryption}`] : []),
    ];
    return asked.length ? `; the write asked for ${asked.join(' and ')}, which this storage may not offer` : '';
  }

  /** Sets an object's retain-until to `until` (Object Lock only ever lets it move later). */
  async retain(name: string, lock: ObjectLock, until: Date): Promise<void> {
    await this.send(name, () => this.call('RETENTION', () => this.client.send(new PutObjectRetentionCommand({
      Bucket: this.address.bucket, Key: this.key(name), Retention: { Mode: lockMode(lock), RetainUntilDate: until },
    }))));
  }

  /** Every object under `dir` (a folder of the archive, such as `data/`), 1,000 a request. */
  async list(dir: string): Promise<Listed[]> {
    const found: Listed[] = [];
    for await (const page of this.listPages(dir)) found.push(...page);
    return found;
  }

  /** The objects under `dir` a request's answer at a time (up to 1,000), in key order: a listing of every object without holding it. */
  async* listPages(dir: string): AsyncGenerator<Listed[]> {
    const skip = this.key('').length;
    let token: string | undefined;
    do {
      const answer = await this.send(dir, () => this.call('LIST', () => this.client.send(new ListObjectsV2Command({ Bucket: this.address.bucket, Prefix: this.key(dir), ContinuationToken: token }))));
      yield (answer.Contents ?? []).map((o) => ({ name: o.Key!.slice(skip), size: o.Size ?? 0, modified: o.LastModified ?? new Date(0) }));
      token = answer.IsTruncated ? answer.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * Deletes `names` for good: in a versioned bucket (Object Lock needs one) every version of each,
   * since a plain delete there only hides the object behind a marker. Answers the names whose
   * deletion the bucket refused (an object still locked), with why.
   */
  async remove(names: string[]): Promise<{ name: string; why: string }[]> {
    if (names.length === 0) return [];
    const wanted = new Set(names.map((n) => this.key(n)));
    const objects: { Key: string; VersionId?: string }[] = [];
    const dirs = new Set(names.map((n) => n.slice(0, n.lastIndexOf('/') + 1)));
    for (const dir of dirs) {
      let keyMarker: string | undefined;
      let versionMarker: string | undefined;
      do {
        const answer = await this.send(dir, () => this.call('LIST', () => this.client.send(new ListObjectVersionsCommand({ Bucket: this.address.bucket, Prefix: this.key(dir), KeyMarker: keyMarker, VersionIdMarker: versionMarker }))));
        for (const v of [...(answer.Versions ?? []), ...(answer.DeleteMarkers ?? [])]) {
          if (wanted.has(v.Key!)) objects.push({ Key: v.Key!, ...(v.VersionId && v.VersionId !== 'null' ? { VersionId: v.VersionId } : {}) });
        }
        keyMarker = answer.IsTruncated ? answer.NextKeyMarker : undefined;
        versionMarker = answer.IsTruncated ? answer.NextVersionIdMarker : undefined;
      } while (keyMarker);
    }
    const refused: { name: string; why: string }[] = [];
    const skip = this.key('').length;
    for (let at = 0; at < objects.length; at += 1000) {
      const batch = objects.slice(at, at + 1000);
      const answer = await this.send(names[0]!, () => this.call('DELETE', () => this.client.send(new DeleteObjectsCommand({
        Bucket: this.address.bucket, Delete: { Objects: batch, Quiet: true },
      }, ))));
      for (const e of answer.Errors ?? []) refused.push({ name: e.Key!.slice(skip), why: `${e.Code ?? 'refused'}${e.Message ? `: ${e.Message}` : ''}` });
    }
    return refused;
  }

  /** Removes one object as a plain delete does (a marker in a versioned bucket): for the lock and markers, never for locked objects. */
  async delete(name: string): Promise<void> {
    await this.send(name, () => this.call('DELETE', () => this.client.send(new DeleteObjectCommand({ Bucket: this.address.bucket, Key: this.key(name) }))));
  }

  /** Requests sent so far, all kinds together. */
  get requestCount(): number {
    return Object.values(this.requests).reduce((a, b) => a + b, 0);
  }

  /** Nothing to close: the client and its connections are shared with the process's other archives. */
  destroy(): void {}
}

const lockMode = (lock: ObjectLock): ObjectLockMode => (lock.mode === 'compliance' ? 'COMPLIANCE' : 'GOVERNANCE');

/** The retain-until of an object written now under `lock`. */
export const retainUntil = (lock: ObjectLock, from = Date.now()): Date => new Date(from + lock.days * 86_400_000);
