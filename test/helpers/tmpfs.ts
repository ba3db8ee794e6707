/**
 * A real tmpfs of a given size for one test file, for disk-full tests. Mounting needs root: as
 * another user the file's tests are skipped, and the reason is printed once.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

export const isRoot = process.getuid?.() === 0;

/** Mounts the tmpfs (`options` besides its size, as `nr_inodes=300`) before the file's tests and removes it after them; returns its folder. */
export function useTmpfs(testFile: string, size: string, options = ''): () => string {
  if (!isRoot) console.log(`${testFile}: skipped: mounting a tmpfs needs root, and this test runs as another user`);
  let mountPoint = '';
  beforeAll(() => {
    if (!isRoot) return;
    mountPoint = mkdtempSync(join(tmpdir(), 'wds-tmpfs-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}${options ? `,${options}` : ''}`, 'tmpfs', mountPoint]);
  });
  afterAll(() => {
    if (!mountPoint) return;
    execFileSync('umount', [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  });
  return () => mountPoint;
}
