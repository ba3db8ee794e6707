/**
 * `npm run docs` (TypeDoc) builds the API docs of the package root and `wds-files/spec` with no
 * warning: every exported name, option and field has its doc comment, every type a public
 * signature uses is exported, and every {@link} resolves. A name exported without docs fails it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../helpers/cli-process.js';

const run = promisify(execFile);

describe('npm run docs', () => {
  const out = mkdtempSync(join(tmpdir(), 'wds-api-docs-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('builds the API docs without a warning, with the options documented', async () => {
    const typedoc = join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc');
    // Type errors are tsc's to find (`npx tsc --noEmit`, CI's typecheck step); TypeDoc's own check of
    // them doubled this test's CPU time. Its validation (undocumented or unexported names, broken
    // links) runs all the same.
    const result = await run(process.execPath, [typedoc, '--out', out, '--skipErrorChecking'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }).then(
      ({ stdout, stderr }) => ({ ok: true, text: stdout + stderr }),
      (error: { stdout?: string; stderr?: string }) => ({ ok: false, text: `${error.stdout ?? ''}${error.stderr ?? ''}` }),
    );
    const warnings = result.text.split('\n').filter((line) => /warning|error/i.test(line) && !/Found 0 errors and 0 warnings/.test(line));
    expect(warnings).toEqual([]);
    expect(result.ok).toBe(true);

    // What a user looks up: the client's options with their defaults, and the pipelines.
    const options = readFileSync(join(out, 'interfaces', 'index.WdsClientOptions.html'), 'utf8');
    expect(options).toContain('Default 120,000');
    expect(options).toContain('WDS_CLIENT_LIMITS');
    expect(existsSync(join(out, 'functions', 'index.runExport.html'))).toBe(true);
    expect(readFileSync(join(out, 'interfaces', 'index.FaceImageListEntry.html'), 'utf8')).toContain('download_url');
    expect(readFileSync(join(out, 'modules', 'spec_public.html'), 'utf8')).toContain('MAX_FILE_BYTES');
  }, 120_000);
});
