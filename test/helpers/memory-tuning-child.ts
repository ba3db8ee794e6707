/**
 * A process of its own for memory-tuning.test.ts (V8's flags are the whole process's): prints one
 * JSON line with what the mode measured.
 *
 *   worker:   young generation committed before and after churn, with the hashing thread started
 *   collect:  young-generation collections while 40 MB of large bodies are counted (tuned)
 *   untuned:  the same without tuneMemory
 *   export / export-untuned: young generation committed before tuneForExport and after churn
 *             with a file landing every 100 objects, tuned or not
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { hashFile } from '../../src/util/hash-file.js';
import { fileLanded, largeBodyBytesRead, tuneForExport, tuneMemory } from '../../src/util/runtime.js';

const mode = process.argv[2];
const youngCommitted = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size;
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

if (mode === 'worker') {
  tuneMemory();
  const file = join(mkdtempSync(join(tmpdir(), 'wds-tuning-')), 'a.bin');
  writeFileSync(file, Buffer.alloc(2 ** 20, 1));
  await hashFile(file);
  await turn();
  const before = youngCommitted();
  // Objects that survive a collection or two: what makes V8 grow its young generation.
  let kept: { i: number; s: string }[] = [];
  for (let i = 0; i < 3_000_000; i += 1) {
    kept.push({ i, s: `x${i}` });
    if (kept.length > 50_000) kept = [];
  }
  console.log(JSON.stringify({ before, after: youngCommitted(), kept: kept.length }));
} else if (mode === 'export' || mode === 'export-untuned') {
  if (mode === 'export') tuneMemory();
  const before = youngCommitted();
  tuneForExport();
  let kept: { i: number; s: string }[] = [];
  for (let i = 0; i < 3_000_000; i += 1) {
    kept.push({ i, s: `x${i}` });
    if (kept.length > 50_000) kept = [];
    if (i % 100 === 0) fileLanded();
  }
  console.log(JSON.stringify({ before, after: youngCommitted(), kept: kept.length }));
} else {
  if (mode === 'collect') tuneMemory();
  let minor = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === 1) minor += 1;
  });
  observer.observe({ entryTypes: ['gc'] });
  const chunk = 64 * 1024;
  for (let read = 0; read < 40 * 2 ** 20; read += chunk) {
    largeBodyBytesRead(chunk);
    if (read % (2 ** 20) === 0) await turn();
  }
  for (let i = 0; i < 20; i += 1) await turn();
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  console.log(JSON.stringify({ minor }));
}
