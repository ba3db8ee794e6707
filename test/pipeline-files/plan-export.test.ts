/**
 * What `plan` says of an export into a target that already holds the files: a folder's manifest
 * and a zip's are looked up on disk (issue 46), each file listed with the same date counted as
 * kept, nothing to download; a target that holds nothing downloads every file.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { loadPipelineFile } from '../../src/pipeline-files/load.js';
import { planPipeline } from '../../src/pipeline-files/plan.js';
import { connectPipeline } from '../../src/pipeline-files/connection.js';
import { runExport } from '../../src/pipelines/export.js';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { useEnv } from '../helpers/env.js';

useEnv({ XDG_STATE_HOME: tempDir('wds-pipeline-state-'), XDG_CACHE_HOME: tempDir('wds-pipeline-cache-') });
const emu = useEmulator({ generate: { members: 8, photo_ratio: 1, photo_bytes: [8_192, 9_000], attachments_per_member: [0, 0] } });
const api = useClient(emu);

it('an export into a folder or a zip that holds every file: all kept, none to download; into a new one, all', async () => {
  const dir = tempDir('wds-plan-export-');
  await runExport({ client: api(), what: 'photos', out: join(dir, 'photos') });
  await runExport({ client: api(), what: 'photos', out: join(dir, 'photos.zip') });
  const plan = async (to: string) => {
    const file = join(dir, 'p.yaml');
    await writeFile(file, `name: plan-export\nconnection: { base_url: "${emu().url}", consumer_key: demo-key, consumer_secret: demo-secret }\nfrom: { service: photos }\nto: ${to}\n`);
    const pipeline = await loadPipelineFile(file, {});
    const connection = await connectPipeline(pipeline);
    try {
      return await planPipeline(pipeline, connection.client);
    } finally {
      await connection.close();
    }
  };
  const folder = await plan('{ folder: photos }');
  expect(folder.files).toMatchObject({ total: 8, transfer: 0, kept: 8 });
  expect(folder.notes.join('\n')).toContain('with the same date are kept');
  const zip = await plan('{ zip: photos.zip }');
  expect(zip.files).toMatchObject({ total: 8, transfer: 0, kept: 8 });
  expect(zip.notes.join('\n')).toContain('are copied from it');
  const fresh = await plan('{ zip: other.zip }');
  expect(fresh.files).toMatchObject({ total: 8, transfer: 8, kept: 0 });
});
