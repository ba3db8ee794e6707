/**
 * The CLI as the package ships it, `node dist/cli/main.js`, for the benches: built from the
 * sources with `npm run build` (as `npm pack` builds it) unless the bench was given --no-build.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');

/** Builds dist/ when `build` is set, checks it is there, and says which CLI the figures are of. */
export function ensureBuilt(build: boolean): string {
  if (build) {
    const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (built.status !== 0) throw new Error(`npm run build failed (${built.signal ?? `exit code ${built.status}`})`);
    return 'node dist/cli/main.js, built now';
  }
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build, or leave out --no-build`);
  return 'node dist/cli/main.js as built before (--no-build)';
}
