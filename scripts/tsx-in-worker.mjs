/**
 * Registers tsx in a worker thread started from the TypeScript sources (tests, `npm run wds`), so
 * that its own module, a .ts file, loads: under Node 20 `--import tsx` registers tsx's hooks on
 * the main thread only. src/util/worker-module.ts passes this as the worker's `--import`; the
 * built package never does (its workers are .js files).
 */
import { register } from 'tsx/esm/api';

register();
