/**
 * What `plan` says about the service's limits: update requests filled to 100 photos, 5 of them
 * a minute, 3,000 requests an hour, and the time those limits alone impose on a run.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineFile } from '../../src/pipeline-files/load.js';
import { limitSeconds, planLines, planPipeline } from '../../src/pipeline-files/plan.js';
import { connectPipeline } from '../../src/pipeline-files/connection.js';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { useEnv } from '../helpers/env.js';
import { plain, writeFiles } from '../import/photo-helpers.js';

// The import journal and the limit windows of this file's runs, not the user's.
useEnv({ XDG_STATE_HOME: tempDir('wds-pipeline-state-'), XDG_CACHE_HOME: tempDir('wds-pipeline-cache-') });
// 601 members without a photo, so that each of the plan's photos is one a run sends.
const emu = useEmulator({ generate: { members: 601, photo_ratio: 0, attachments_per_member: [0, 0] } });

describe('plan', () => {
  it('the limits alone: 5 update requests a minute, 3,000 requests an hour', () => {
    expect([0, 1, 5, 6, 10, 11, 25].map((n) => limitSeconds(n, n))).toEqual([0, 0, 0, 60, 60, 120, 240]);
    expect(limitSeconds(0, 3000)).toBe(0);
    expect(limitSeconds(0, 3001)).toBe(3600);
    expect(limitSeconds(0, 9001)).toBe(3 * 3600);
  });

  it('601 photos in a folder, each checked as a run checks it: 7 update requests of at most 100, a minute of waiting, and nothing sent', async () => {
    const dir = tempDir('wds-plan-');
    const photo = await plain(8, 8, 1).jpeg().toBuffer();
    const files: Record<string, Buffer> = {};
    for (let i = 1; i <= 601; i += 1) files[`inbox/G${String(i).padStart(6, '0')}.jpg`] = photo;
    await writeFiles(dir, files);
    const file = join(dir, 'p.yaml');
    await writeFile(file, `name: plan-limits\nconnection: { base_url: "${emu().url}", consumer_key: demo-key, consumer_secret: demo-secret }\nfrom: { folder: inbox }\nto: { service: photos }\n`);
    const pipeline = await loadPipelineFile(file, {});
    const connection = await connectPipeline(pipeline);
    try {
      const plan = await planPipeline(pipeline, connection.client);
      expect(plan.files).toMatchObject({ total: 601, transfer: 601, bytes: 601 * photo.length });
      expect(plan.requests.update).toBe(7);
      expect(plan.limit_seconds).toBe(60);
      const lines = planLines(plan);
      expect(lines[0]).toBe(`601 files in the source: 601 to send (${(601 * photo.length).toLocaleString('en-US')} bytes)`);
      expect(lines.join('\n')).toContain('the limits alone impose at least 1 min');
    } finally {
      await connection.close();
    }
    expect((await emu().control('GET', '/stats')).update_requests).toBe(0);
  });
});
