/**
 * Environment variables a test file sets for its in-process runs, put back as they were when the
 * file ends: test files share their worker process (vitest's isolate: false), and a later file
 * must not inherit an earlier one's journal or limit-window folders.
 */
import { afterAll } from 'vitest';

export function useEnv(values: Record<string, string>): void {
  const saved = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  Object.assign(process.env, values);
  afterAll(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}
