/**
 * A person's `photos import --database` for one company while the fleet's workers run every
 * company's pipelines (DESIGN.md sections 8 and 14): the import and the workers share that
 * company's limit windows through PostgreSQL, so the service answers no 429, and every import
 * succeeds. Real `fleet worker` and `photos import` child processes, the emulator in this process.
 *
 * Each company allows 2 update requests a minute, and WDS_CLIENT_LIMITS gives every process a
 * window of 2 per 61 s. The import registers one photo and replaces one (2 update requests), as
 * does each company's fleet run; the import and the fleet's runs are started together, so
 * whichever of the import and p1's run comes second must wait for the other's window, rather
 * than be refused.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir, type EmulatorState } from '../helpers/export.js';
import { expectNoOverlap, runHistory, startFleetWorker, until, type FleetWorkerProcess } from '../helpers/fleet.js';
import { usePostgres } from '../helpers/postgres.js';
import { noisyJpeg, sha256, writeFiles } from '../import/photo-helpers.js';

const COMPANIES = ['p1', 'p2', 'p3'];
const secretOf = (company: string): string => `${company}-secret-77e0`;
const LIMITS = { WDS_CLIENT_LIMITS: 'update=2/61s' };
const dir = tempDir('wds-fleet-beside-');
await writeFile(join(dir, 'emulator.yaml'), `companies:\n${COMPANIES.map((c, i) => `  - name: ${c}
    consumer_key: ${c}-key
    consumer_secret: ${secretOf(c)}
    maintenance: false
    limits: { updates_per_minute: 2 }
    generate: { members: 6, seed: ${i + 1}, photo_ratio: 0.5, photo_bytes: [20000, 30000], attachments_per_member: [0, 0] }
`).join('')}`);
const emu = useEmulator({ config: join(dir, 'emulator.yaml') });

describe('a CLI import for one company beside the fleet\'s workers', { timeout: 600_000 }, () => {
  const db = usePostgres();
  const workers: FleetWorkerProcess[] = [];
  /** What each company's members' photos should be after the imports: code -> sha256. */
  const expected = new Map<string, Map<string, string>>();

  const state = async (company: string): Promise<EmulatorState> => (await emu().control('GET', `/state?company=${company}`)) as EmulatorState;
  const companyStats = (company: string) => emu().emulator.company(company)!.stats;

  /** A folder of two photos for `company`: one for a member without a photo, one replacing another's. */
  async function photos(company: string, folder: string, pick: number, seed: number): Promise<void> {
    const members = (await state(company)).members;
    const without = members.filter((m) => m.photo === null).map((m) => m.code).sort();
    const withPhoto = members.filter((m) => m.photo !== null).map((m) => m.code).sort();
    const files: Record<string, Buffer> = {};
    for (const [i, code] of [without[pick]!, withPhoto[pick]!].entries()) {
      files[`${code}.jpg`] = await noisyJpeg(48, 48, seed + i);
      expected.set(company, (expected.get(company) ?? new Map<string, string>()).set(code, sha256(files[`${code}.jpg`]!)));
    }
    await writeFiles(folder, files);
  }

  beforeAll(async () => {
    // Each company's fleet pipeline imports the photos dropped for it.
    await writeFile(join(dir, 'photos.yaml'), 'name: photos\nfrom: { folder: "drop/${COMPANY}" }\nsteps:\n  - submit: { trim: false }\nto: { service: photos }\n');
    await writeFile(join(dir, 'companies.yaml'), `companies:\n${COMPANIES.map((c) => `  - name: ${c}\n    base_url: ${emu().url}\n    consumer_key: ${c}-key\n    consumer_secret: \${SECRET_${c.toUpperCase()}}\n    pipelines: [photos.yaml]\n`).join('')}`);
    for (const [i, company] of COMPANIES.entries()) await photos(company, join(dir, 'drop', company), 0, 10 * (i + 1));
    // The person's import for p1: other members than the fleet's pipeline imports.
    await photos('p1', join(dir, 'manual'), 1, 100);
  }, 120_000);

  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.done));
  });

  const env = (): NodeJS.ProcessEnv => ({ ...LIMITS, ...Object.fromEntries(COMPANIES.map((c) => [`SECRET_${c.toUpperCase()}`, secretOf(c)])), WDS_FLEET_LEASE: '30' });

  it('the import and the workers\' runs all succeed, and no company, p1 included, is answered 429', async () => {
    for (let i = 0; i < 2; i += 1) workers.push(startFleetWorker(['--database', db.url, '--companies', join(dir, 'companies.yaml'), '--concurrency', '2'], env()));
    await Promise.all(workers.map((w) => w.up));
    for (const company of COMPANIES) companyStats(company).reset();

    const [imported, ...queued] = await Promise.all([
      runCli(['photos', 'import', join(dir, 'manual'), '--json', '--no-trim', '--database', db.url, '--base-url', emu().url, '--consumer-key', 'p1-key'], { ...LIMITS, WDS_CONSUMER_SECRET: secretOf('p1') }),
      ...COMPANIES.map((c) => runCli(['fleet', 'run', '--database', db.url, c, 'photos'], env())),
    ]);
    for (const run of queued) expect(run.code, run.stderr).toBe(0);
    expect(imported.code, imported.stderr).toBe(0);
    const report = JSON.parse(imported.stdout) as { counts: Record<string, number> };
    expect(report.counts, imported.stdout).toMatchObject({ ok: 2 });
    await until('every company\'s fleet run to end', async () => {
      const rows = await runHistory(db.url);
      return COMPANIES.every((c) => rows.some((r) => r.company === c && r.status !== 'running'));
    }, workers);

    const rows = await runHistory(db.url);
    expect(rows.map((r) => [r.company, r.status])).toEqual(COMPANIES.map((c) => [c, 'ok']));
    expectNoOverlap(rows);
    for (const company of COMPANIES) {
      expect(companyStats(company).rate_limited, `429s in ${company}`).toBe(0);
      expect(companyStats(company).update_requests, company).toBe(company === 'p1' ? 4 : 2);
      const photosNow = new Map((await state(company)).members.map((m) => [m.code, m.photo?.sha256 ?? null]));
      for (const [code, hash] of expected.get(company)!) expect(photosNow.get(code), `${company} ${code}`).toBe(hash);
    }
    // The four update requests of p1 did not fit one window: the import or p1's run waited for the other's.
    expect(`${imported.stderr}\n${workers.map((w) => w.log()).join('\n')}`).toMatch(/waiting \d+\.\d s: 2 update requests per 61 s reached/);
  });
});
