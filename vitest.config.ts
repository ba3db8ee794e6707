import { defineConfig } from 'vitest/config';
import { LongFirst } from './test/long-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The CLI's child processes run src/ compiled once per run (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Files share their worker's modules rather than loading src/, sharp and undici again each:
    // about a fifth of the suite's CPU. A file that sets process-wide state puts it back when it
    // ends (test/helpers/env.ts).
    isolate: false,
    // Most files wait on child processes, storage latency and the service's clock rather than on
    // the CPU: four at once on two cores keep the suite within minutes.
    maxWorkers: 4,
    // The files of a minute or more start first (test/long-first.ts).
    sequence: { sequencer: LongFirst },
  },
});
