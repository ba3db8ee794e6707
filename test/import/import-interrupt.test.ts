/**
 * A photo import stopped by SIGINT (once SIGTERM) at random moments, while checking and while
 * sending (DESIGN.md section 8, issue 14): the real CLI against the emulator, with the face image
 * requests and tasks slowed down so that 300 photos take four requests and a few seconds. Each
 * stopped run exits 130 (143), writes its report and the summary line, reports exactly the photos
 * the service took (none failed), and leaves no temporary folder or file. Once, Ctrl-C reaches the
 * whole process group, the image checker too, as from a terminal. The rerun, with the same
 * journal, completes and sends no photo that the stopped run applied.
 *
 * Then a run SIGKILLed while its task waits in the service's queue: the rerun reads that task's
 * end from the journal and reports every photo right, with no "already has a face image". The
 * same when the answer naming the task was lost and the run was killed while it awaited the
 * request's effect in the listing: the rerun awaits it in turn instead of sending the photos again.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY, SECRET, launch, useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, runCli, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, photoRequests, resetStats, sha256, startCapturingProxy, type CapturingProxy } from './photo-helpers.js';
import { generatedCodes, journalLines, pause, photoFolder, runPlace, spawnCliGroup, type RunPlace } from './journal-helpers.js';

const MEMBERS = 300;
/** Random moments each run: six keep the file at about a minute and a half; CI runs draw new ones. */
const MOMENTS = 6;
const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0.5, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] },
  limits: { updatesPerMinute: 10_000 },
  taskTiming: { waitMs: 150, runMs: 250, perItemMs: 0 },
});

interface Report {
  interrupted?: { signal: string; total?: number; unreached?: number };
  counts: Record<string, number>;
  items: { code: string; outcome: string; reason: string }[];
}

const codes = generatedCodes(MEMBERS);
let folder: { dir: string; files: Map<string, Buffer> };
let proxy: CapturingProxy;

beforeAll(async () => {
  folder = await photoFolder(codes, 7);
  proxy = await startCapturingProxy(emu().url);
});
afterAll(async () => {
  await proxy?.close();
});
/** The company as generated, with no fault and counters at zero. */
async function fresh(): Promise<void> {
  await emu().control('POST', '/reset');
  await emu().control('DELETE', '/faults');
  await resetStats(emu());
}

const importArgs = (baseUrl: string, report: string): string[] =>
  ['photos', 'import', folder.dir, '--no-trim', '--report', report, '--base-url', baseUrl, '--consumer-key', KEY, '--consumer-secret', SECRET];

/** Members whose photo is now the file's bytes. */
async function applied(): Promise<Set<string>> {
  const held = await photoHashes(emu());
  return new Set(codes.filter((code) => held.get(code) === sha256(folder.files.get(code)!)));
}

/** What a run left in its temp folder (tsx, which runs the CLI from its sources, keeps its cache there). */
const leftInTemp = async (tmp: string): Promise<string[]> => (await readdir(tmp)).filter((n) => !n.startsWith('tsx-'));

/** Every file under `dir` whose name says it is temporary. */
async function temporaryFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir, { recursive: true });
  return names.filter((n) => /\.tmp$|\.partial|wds-files-photos-/.test(n));
}

type Moment = { phase: 'check' | 'send'; signal: NodeJS.Signals; group: boolean; requests: number; delayMs: number };

/** Three moments while checking (the first signals the whole process group), three while sending; the last is SIGTERM. */
const CHECKING = 3;
const moments = (): Moment[] => Array.from({ length: MOMENTS }, (_, i) => ({
  phase: i < CHECKING ? 'check' : 'send',
  signal: i === MOMENTS - 1 ? 'SIGTERM' : 'SIGINT',
  group: i === 0,
  requests: 1 + (i % 3),
  delayMs: Math.floor(Math.random() * (i < CHECKING ? 400 : 500)),
}));

/** Starts the import and signals it at the moment; answers the run and the face image requests made by then. */
async function stopAt(moment: Moment, place: RunPlace, report: string): Promise<{ run: CliRun; sentBefore: number }> {
  await emu().control('POST', '/faults', { api: { latency_ms: 300, path_contains: 'face_image' } });
  const args = importArgs(emu().url, report);
  const child = moment.group ? spawnCliGroup(args, place.env) : spawnCli(args, place.env);
  const done = finished(child);
  let ended = false;
  void done.then(() => (ended = true));
  const sends = async (): Promise<number> => { const r = await photoRequests(emu()); return r.register + r.update; };
  const ready = moment.phase === 'check'
    ? async () => (await readdir(place.tmp)).some((n) => n.startsWith('wds-files-photos-'))
    : async () => (await sends()) >= moment.requests;
  while (!ended && !(await ready())) await pause(10);
  await pause(moment.delayMs);
  const sentBefore = await sends();
  if (!ended) {
    if (moment.group) process.kill(-child.pid!, moment.signal);
    else child.kill(moment.signal);
  }
  const run = await done;
  await emu().control('DELETE', '/faults');
  return { run, sentBefore };
}

describe('a photo import stopped by a signal', () => {
  it(`reports what the service took, leaves no temporary file, and the rerun sends only the rest (${MOMENTS} moments)`, { timeout: 600_000 }, async () => {
    const phases = { check: 0, send: 0 };
    for (const moment of moments()) {
      await fresh();
      const place = runPlace();
      const report = join(tempDir(), 'report.json');
      const { run, sentBefore } = await stopAt(moment, place, report);
      const what = `${moment.signal} ${moment.group ? 'to the group ' : ''}after ${sentBefore} requests (${moment.phase}, +${moment.delayMs} ms)`;
      phases[sentBefore === 0 ? 'check' : 'send'] += 1;

      expect(run.code, `${what}\n${run.stdout}\n${run.stderr}`).toBe(moment.signal === 'SIGTERM' ? 143 : 130);
      const written = JSON.parse(await readFile(report, 'utf8')) as Report;
      const took = await applied();
      expect(written.interrupted, what).toEqual({ signal: moment.signal, total: MEMBERS, unreached: MEMBERS - took.size });
      expect(run.stdout, what).toContain(`interrupted: ${took.size} of ${MEMBERS} done; run it again to continue (stopped by ${moment.signal})`);
      // Every photo is in the report once: those the service took ok, none failed, none lost, and
      // the rest skipped as not sent.
      expect(written.counts, what).toMatchObject({ failed: 0, unknown: 0, invalid: 0, skipped: MEMBERS - took.size });
      expect(written.items.map((i) => i.code).sort(), what).toEqual([...codes].sort());
      expect(new Set(written.items.filter((i) => i.outcome === 'ok').map((i) => i.code)), what).toEqual(took);
      for (const item of written.items.filter((i) => i.outcome !== 'ok')) {
        expect(item.reason, what).toBe(`not sent: the run was stopped (${moment.signal}) before it reached this file; run it again to send it`);
      }
      if (sentBefore === 0) expect(took.size, what).toBe(0);
      expect(run.stderr, what).not.toMatch(/image checker|Warning|Error/);
      // No temporary folder in the temp folder, no temporary file beside the journal or the photos.
      expect(await leftInTemp(place.tmp), what).toEqual([]);
      expect(await temporaryFiles(place.stateHome), what).toEqual([]);
      expect(await temporaryFiles(folder.dir), what).toEqual([]);

      // The rerun, through a proxy that sees every photo sent.
      proxy.sent.length = 0;
      const rerunReport = join(tempDir(), 'rerun.json');
      const rerun = await runCli(importArgs(proxy.url, rerunReport), place.env);
      expect(rerun.code, `${what}: rerun\n${rerun.stdout}\n${rerun.stderr}`).toBe(0);
      expect(proxy.sent.filter((p) => took.has(p.code)).map((p) => p.code), what).toEqual([]);
      expect(proxy.sent.map((p) => p.code).sort(), what).toEqual(codes.filter((c) => !took.has(c)));
      const again = JSON.parse(await readFile(rerunReport, 'utf8')) as Report;
      expect(again.counts, what).toMatchObject({ ok: MEMBERS - took.size, skipped: took.size, failed: 0 });
      expect((await applied()).size, what).toBe(MEMBERS);
      expect(await leftInTemp(place.tmp), what).toEqual([]);
    }
    // The moments fell in both phases.
    expect(phases.check, JSON.stringify(phases)).toBeGreaterThan(0);
    expect(phases.send, JSON.stringify(phases)).toBeGreaterThan(0);
  });
});

describe('a photo import SIGKILLed while its task waits in the queue', () => {
  it('the rerun reads the task from the journal: every photo right, none "already has a face image", none sent twice', { timeout: 180_000 }, async () => {
    // Tasks wait 4 s before they run: the kill lands while the first request's task is queued.
    const queued = await launch({
      limits: { updatesPerMinute: 10_000 }, taskTiming: { waitMs: 4000, runMs: 100, perItemMs: 0 },
      generate: { members: MEMBERS, photo_ratio: 0.5, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] },
    });
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    try {
      const args = ['photos', 'import', folder.dir, '--no-trim', '--report', report, ...connectionArgs(queued)];
      const child = spawnCli(args, place.env);
      const done = finished(child);
      // Killed once the journal holds the first request's task id.
      while (!journalLines(place.stateHome).some((l) => l.t === 'task')) await pause(10);
      child.kill('SIGKILL');
      const killed = await done;
      expect(killed.signal).toBe('SIGKILL');

      const rerun = await runCli(args, place.env);
      expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
      const written = JSON.parse(await readFile(report, 'utf8')) as Report;
      expect(written.counts).toMatchObject({ failed: 0, unknown: 0, invalid: 0, conflict: 0 });
      expect(written.items.filter((i) => /already has a face image/.test(i.reason))).toEqual([]);
      // The killed run's first request took its photos; the rerun skipped them and sent the rest.
      const firstRequest = journalLines(place.stateHome).find((l) => l.t === 'send') as unknown as { files: { code: string }[] };
      expect(written.counts.skipped).toBe(firstRequest.files.length);
      expect(written.counts.ok).toBe(MEMBERS - firstRequest.files.length);
      const held = await photoHashes(queued);
      for (const code of codes) expect(held.get(code), code).toBe(sha256(folder.files.get(code)!));
    } finally {
      await queued.close();
    }
  });

  it('killed while awaiting a lost answer\'s effect: the rerun awaits it in the listing and sends none of those photos again', { timeout: 180_000 }, async () => {
    const queued = await launch({
      limits: { updatesPerMinute: 10_000 }, taskTiming: { waitMs: 5000, runMs: 100, perItemMs: 0 },
      generate: { members: MEMBERS, photo_ratio: 0.5, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] },
    });
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    try {
      // Photos for the members without one only: every request registers, so the first is the one the fault cuts.
      const state = (await queued.control('GET', '/state')) as { members: { code: string; photo: unknown }[] };
      const without = state.members.filter((m) => m.photo === null).map((m) => m.code);
      const own = await photoFolder(without, 7);
      await queued.control('POST', '/faults', { api: { reset_rate: 1, path_contains: 'face_image', method: 'POST', max_faults: 1 } });
      const args = ['photos', 'import', own.dir, '--no-trim', '--report', report, ...connectionArgs(queued)];
      const child = spawnCli(args, place.env);
      const done = finished(child);
      // The routing listing, then the first listing that looks for the lost request's photos.
      const listings = async (): Promise<number> => ((await queued.control('GET', '/stats')).requests['GET /members/face_image'] ?? 0) as number;
      while ((await listings()) < 2) await pause(10);
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
      const lines = journalLines(place.stateHome);
      expect(lines.map((l) => l.t)).toEqual(['send']);
      await queued.control('DELETE', '/faults');

      const rerun = await runCli(args, place.env);
      expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
      const written = JSON.parse(await readFile(report, 'utf8')) as Report;
      expect(written.items.filter((i) => /already has a face image/.test(i.reason))).toEqual([]);
      const lost = (lines[0] as unknown as { files: { code: string }[] }).files.map((f) => f.code);
      expect(written.items.filter((i) => i.outcome === 'skipped').map((i) => i.code).sort()).toEqual(lost.sort());
      expect(written.counts).toMatchObject({ ok: without.length - lost.length, failed: 0, unknown: 0 });
      const held = await photoHashes(queued);
      for (const code of without) expect(held.get(code), code).toBe(sha256(own.files.get(code)!));
    } finally {
      await queued.close();
    }
  });
});
