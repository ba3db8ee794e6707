/**
 * SHA-256 of files on disk, computed on a worker thread of its own. Hashing on the main thread
 * took a quarter of an export's CPU there (bench/export, 200 files of 5 MB: 2.2 GB/s of SHA-256
 * against about 500 MB/s of downloads), time the main thread needs for the connections. Sinks hash
 * what they wrote, after it is on disk: the manifest's sha256 is that of the bytes that landed.
 *
 * One worker serves the process (hash-worker.ts), started when first needed and not keeping the
 * process alive. Should the worker die, the files it had are answered with the error and the next
 * call starts a new one.
 */
import { createHash } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { keepMemoryTuning } from './runtime.js';
import { startWorker } from './worker-module.js';
import type { HashReply, HashRequest } from './hash-worker.js';

export interface FileDigest {
  sha256: string;
  size: number;
}

interface Pending {
  resolve: (digest: FileDigest) => void;
  reject: (error: Error) => void;
}

let worker: Worker | null = null;
let nextId = 0;
const pending = new Map<number, Pending>();

function failAll(error: Error): void {
  for (const p of pending.values()) p.reject(error);
  pending.clear();
}

function theWorker(): Worker {
  if (worker) return worker;
  const started = startWorker('hash-worker', import.meta.url, { resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 } });
  started.unref();
  started.once('online', keepMemoryTuning);
  // Run from source, the thread then registers tsx, whose loader thread's start undoes the tuning
  // again; by its first answer the thread has started all it ever starts.
  started.once('message', keepMemoryTuning);
  started.on('message', (reply: HashReply) => {
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    if (pending.size === 0) started.unref();
    if (reply.error) {
      const error = new Error(reply.error.message) as Error & { code?: string };
      if (reply.error.code) error.code = reply.error.code;
      waiting.reject(error);
    } else waiting.resolve({ sha256: reply.sha256!, size: reply.size! });
  });
  started.on('error', (error) => {
    if (worker === started) worker = null;
    failAll(new Error(`the hashing thread failed: ${error.message}`));
  });
  started.on('exit', (code) => {
    if (worker === started) worker = null;
    if (pending.size) failAll(new Error(`the hashing thread exited with ${code}`));
  });
  worker = started;
  return started;
}

/** The SHA-256 (hex) and size of a file, read on the hashing thread. */
export function hashFile(path: string): Promise<FileDigest> {
  const w = theWorker();
  const id = nextId++;
  return new Promise<FileDigest>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Referenced while it has work: a run waiting only on a hash must not end early.
    w.ref();
    w.postMessage({ id, path } satisfies HashRequest);
  });
}

/** The SHA-256 (hex) and size of bytes in memory, on this thread: for small files. */
export function digestOf(chunks: readonly Buffer[]): FileDigest {
  const hash = createHash('sha256');
  let size = 0;
  for (const chunk of chunks) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256: hash.digest('hex'), size };
}
