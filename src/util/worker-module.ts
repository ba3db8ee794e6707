/**
 * Worker threads that run a module of their own, found beside the module that starts them (as
 * the photo checker finds its child process): the compiled .js when that module is compiled, or
 * bundled (scripts/bundle-cli.mjs puts each worker's file beside the bundle); else the .ts
 * source, loaded through tsx (scripts/tsx-in-worker.mjs) in the thread.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Starts the worker module `name` (without its extension) that lies beside `from`, the caller's `import.meta.url`. */
export function startWorker(name: string, from: string, options: WorkerOptions): Worker {
  if (!from.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, from), options);
  const hooks = new URL('../../scripts/tsx-in-worker.mjs', import.meta.url).href;
  return new Worker(new URL(`./${name}.ts`, from), { ...options, execArgv: ['--import', hooks] });
}
