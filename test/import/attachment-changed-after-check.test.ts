/**
 * An attachment changed between its check and its request (the real CLI): two requests, one to
 * replace three files the service holds and one to add three, a few seconds apart on the client's
 * update window. One file of the request that waits is rewritten meanwhile: that request is cut
 * off, the changed file fails saying so, and the others of its request are sent again without it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, spawnCli, stderrMatching } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { sha256, writeFiles } from './photo-helpers.js';
import { QUALIFICATIONS, addRecordWithFile, attachmentFacts, pdf } from './attachment-helpers.js';
import { generatedCodes, runPlace } from './journal-helpers.js';

const emu = useEmulator({
  generate: { members: 6, photo_ratio: 0, attachments_per_member: [0, 0] },
  limits: { updatesPerMinute: 10_000 },
});
const where = ['--sheet', String(QUALIFICATIONS.sheet), '--field', String(QUALIFICATIONS.field)];

describe('an attachment that changed since its check', () => {
  it('fails alone: the others of its request are sent again without it', { timeout: 90_000 }, async () => {
    const codes = generatedCodes(6);
    for (const code of codes.slice(0, 3)) addRecordWithFile(emu(), QUALIFICATIONS, code, 'licence.pdf', pdf(2_000));
    const files: Record<string, Buffer> = {};
    for (const [i, code] of codes.entries()) files[`${code}/licence.pdf`] = pdf(3_000 + i);
    const dir = await writeFiles(tempDir('wds-att-changed-'), files);
    const report = join(tempDir('wds-att-changed-report-'), 'report.json');
    const place = runPlace();
    const child = spawnCli(['attachments', 'import', dir, ...where, '--report', report, ...connectionArgs(emu())], { ...place.env, WDS_CLIENT_LIMITS: 'update=1/5s' });
    const run = finished(child);
    await stderrMatching(child, /waiting \d+\.\d s: 1 update requests? per/, 60_000);

    // The files of the request that waits are those the service does not hold yet.
    const held = new Set((await attachmentFacts(emu())).map((f) => f.sha256));
    const waiting = Object.keys(files).filter((name) => !held.has(sha256(files[name]!)));
    expect(waiting.length).toBeGreaterThanOrEqual(2);
    const changed = waiting[0]!;
    writeFileSync(join(dir, changed), pdf(9_000));
    const ended = await run;

    expect(ended.code, ended.stdout + ended.stderr).toBe(3);
    const written = JSON.parse(readFileSync(report, 'utf8')) as { items: { path: string; outcome: string; reason: string }[] };
    for (const item of written.items) {
      if (item.path.endsWith(changed)) {
        expect(item.outcome).toBe('failed');
        expect(item.reason).toContain('changed since its check: not sent');
      } else expect(item.outcome, item.path).toBe('ok');
    }
    const now = await attachmentFacts(emu());
    expect(now.some((f) => f.sha256 === sha256(files[changed]!) || f.sha256 === sha256(pdf(9_000)))).toBe(false);
    for (const name of waiting.slice(1)) expect(now.some((f) => f.sha256 === sha256(files[name]!)), name).toBe(true);
  });
});
