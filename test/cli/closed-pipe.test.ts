/**
 * A reader that stops early: `wds-files verify DIR | head -1` through a real shell pipe. head exits
 * after the first line, and the rest of verify's output meets a closed pipe (EPIPE): verify ends
 * quietly, with no stack trace, and with its own exit code (3: the folder has files the manifest
 * does not name).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/export.js';
import { CLI_MAIN, ROOT } from '../helpers/cli-process.js';

function shell(script: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('sh', ['-c', script, 'sh', ...args], { cwd: ROOT });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((done, fail) => {
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

it('verify DIR | head -1: no stack trace, and verify exits with its own code', async () => {
  const dir = join(tempDir(), 'export');
  mkdirSync(join(dir, 'photos'), { recursive: true });
  writeFileSync(join(dir, 'manifest.jsonl'), '');
  // Some 250 KB of problem lines, far more than a pipe holds, so that most are written after head has gone.
  for (let i = 0; i < 3000; i += 1) writeFileSync(join(dir, 'photos', `left-over-by-someone-else-${String(i).padStart(5, '0')}.jpg`), 'x');
  const run = await shell(
    `{ "${process.execPath}" "${CLI_MAIN}" verify "$1"; echo "verify-exit=$?" >&2; } | head -1`,
    [dir],
  );
  expect(run.stdout).toMatch(/^verify .*: 0 of 0 files match the manifest/);
  expect(run.stdout.trim().split('\n')).toHaveLength(1);
  expect(run.stderr).toContain('verify-exit=3');
  expect(run.stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
  expect(run.stderr.trim()).toBe('verify-exit=3');
});
