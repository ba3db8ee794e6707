/**
 * `wds-files archive ...` and `wds-files run` into an archive, as a user runs them: the CLI as a
 * child process against the emulator in-process. list, show and diff read what the runs made;
 * check finds a damaged file (size, or with --read-data its bytes) and exits 3; restore gives a
 * folder and a zip that verify; forget --dry-run removes nothing and forget keeps what its rules
 * say. A `run` SIGKILLed mid-snapshot leaves a .partial that the next run continues, downloading
 * only the files it lacks.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { runCli, spawnCli, finished } from '../helpers/cli-process.js';
import { state, tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { archiveRun, changeAttachments, deleteMember, manifestOf, resetStats, storageDownloads } from './helpers.js';

const emu = useEmulator({ generate: { members: 60, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 20_000] } });
const api = useClient(emu);

describe('archive commands', () => {
  const archive = join(tempDir('wds-archive-cli-'), 'archive');
  const ids: string[] = [];
  let changed: string[] = [];

  beforeAll(async () => {
    ids.push((await archiveRun(api(), archive)).snapshot!.id);
    changed = await changeAttachments(emu(), 2, 'G000003');
    await deleteMember(emu(), 'G000003');
    ids.push((await archiveRun(api(), archive)).snapshot!.id);
  }, 30_000);

  it('list, show and diff say what the runs made', async () => {
    const list = await runCli(['archive', 'list', archive, '--json']);
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout);
    expect(listed.snapshots.map((s: { id: string }) => s.id)).toEqual(ids);
    expect(listed.snapshots[1]).toMatchObject({ complete: true, new: changed.length, latest: true });
    const text = await runCli(['archive', 'list', archive]);
    expect(text.stdout).toMatch(new RegExp(`${ids[1]}\\s+yes\\s+\\d+\\s+${changed.length}\\s+.*\\(latest\\)`));

    const show = await runCli(['archive', 'show', archive, `@${ids[0]}`]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`snapshot ${ids[0]}`);
    expect(show.stdout).toContain('since nothing (the first snapshot)');
    // Members counted once across the photos and each file part, read from the manifest in order.
    const shown = [...(await manifestOf(join(archive, 'snapshots', ids[0]!))).values()];
    const parts = new Map<string, number>();
    for (const l of shown) if (l.kind === 'attachment') parts.set(`sheet ${l.sheet_id}, field ${l.custom_field_id}`, (parts.get(`sheet ${l.sheet_id}, field ${l.custom_field_id}`) ?? 0) + 1);
    expect(parts.size).toBeGreaterThan(1);
    const photos = shown.filter((l) => l.kind === 'photo').length;
    expect(show.stdout).toContain(`  ${new Set(shown.map((l) => l.code)).size} members: ${photos} photos${[...parts].map(([part, n]) => `, ${n} attachments in ${part}`).join('')}`);

    const diff = await runCli(['archive', 'diff', archive, `@${ids[0]}`, 'latest']);
    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout).toContain('member G000003');
    const gone = [...(await manifestOf(join(archive, 'snapshots', ids[0]!))).values()].filter((l) => l.code === 'G000003');
    for (const line of gone) expect(diff.stdout).toContain(`  - ${line.path}`);
    for (const id of changed) {
      const [sheet, field, code, name] = id.split('/');
      expect(diff.stdout).toContain(`member ${code}`);
      expect(diff.stdout).toContain(`  M attachments/${sheet}/${field}/${code}/${name}`);
    }
    expect(diff.stdout).toContain(`0 added, ${changed.length} changed, ${gone.length} deleted`);

    const unknown = await runCli(['archive', 'show', archive, '@2020-01-01T000000']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(`has no snapshot 2020-01-01T000000; it holds ${ids.join(', ')}`);
  });

  it('restore gives a folder and a zip that verify and hold the snapshot\'s files', async () => {
    const out = tempDir('wds-restore-');
    for (const target of [join(out, 'folder'), join(out, 'files.zip')]) {
      const run = await runCli(['archive', 'restore', archive, `@${ids[0]}`, '--out', target]);
      expect(run.code, run.stderr + run.stdout).toBe(0);
      const verified = await verifyExport(target);
      expect(verified.problems).toEqual([]);
      expect(verified.files).toBe((await manifestOf(join(archive, 'snapshots', ids[0]!))).size);
    }
    expect(existsSync(join(out, 'folder', 'snapshot.json'))).toBe(false);
    const inside = await runCli(['archive', 'restore', archive, '--out', join(archive, 'x')]);
    expect(inside.code).toBe(2);
    // The same snapshot again goes on there; another, lacking G000003's files, would mix with them.
    for (const target of [join(out, 'folder'), join(out, 'files.zip')]) {
      expect((await runCli(['archive', 'restore', archive, `@${ids[0]}`, '--out', target])).code).toBe(0);
      const mixed = await runCli(['archive', 'restore', archive, 'latest', '--out', target]);
      expect(mixed.code, mixed.stderr).toBe(2);
      expect(mixed.stderr).toContain(`--out ${target} already holds files that snapshot ${ids[1]} does not (attachments/`);
      expect((await verifyExport(target)).files).toBe((await manifestOf(join(archive, 'snapshots', ids[0]!))).size);
    }
  });

  it('restore --member gives the files of the members named alone, and refuses a code the snapshot does not hold', async () => {
    const out = tempDir('wds-restore-member-');
    const first = await manifestOf(join(archive, 'snapshots', ids[0]!));
    // The member deleted since the first snapshot: its files come back from that snapshot alone.
    const theirs = [...first.values()].filter((l) => l.code === 'G000003');
    expect(theirs.length).toBeGreaterThan(0);
    const target = join(out, 'g3');
    const run = await runCli(['archive', 'restore', archive, `@${ids[0]}`, '--member', 'G000003', '--out', target]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toContain(`snapshot ${ids[0]} (the files of G000003) restored to ${target}`);
    const verified = await verifyExport(target);
    expect(verified.problems).toEqual([]);
    expect([...(await manifestOf(target)).values()].map((l) => l.path).sort()).toEqual(theirs.map((l) => l.path).sort());
    for (const line of theirs) expect(await readFile(join(target, line.path))).toEqual(await readFile(join(archive, 'snapshots', ids[0]!, line.path)));

    const two = await runCli(['archive', 'restore', archive, `@${ids[0]}`, '--member', 'G000003', '--member', 'G000004', '--out', join(out, 'two.zip'), '--json']);
    expect(two.code, two.stderr).toBe(0);
    expect(JSON.parse(two.stdout)).toMatchObject({ members: ['G000003', 'G000004'] });
    expect((await verifyExport(join(out, 'two.zip'))).files).toBe([...first.values()].filter((l) => l.code === 'G000003' || l.code === 'G000004').length);

    // G000003 is in no later snapshot: asked of the latest, nothing is made.
    const missing = await runCli(['archive', 'restore', archive, '--member', 'G000003', '--member', 'NOPE', '--out', join(out, 'none')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`snapshot ${ids[1]} holds no file of G000003, NOPE; nothing was restored`);
    expect(existsSync(join(out, 'none'))).toBe(false);
  });

  it('check passes, then names a file cut short and one whose bytes changed (--read-data 100), exit 3', async () => {
    const ok = await runCli(['archive', 'check', archive, '--read-data', '100']);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain('no problem found');
    // A copy of the archive to damage: the real one stays for the other tests.
    const copies = tempDir('wds-archive-damaged-');
    const damaged = join(copies, 'a');
    // Restored outside it, then moved in: nothing but an archive run writes inside an archive.
    const restoreRun = async (id: string) => runCli(['archive', 'restore', archive, `@${id}`, '--out', join(copies, id)]);
    for (const id of ids) expect((await restoreRun(id)).code).toBe(0);
    await mkdir(join(damaged, 'snapshots'), { recursive: true });
    for (const id of ids) await rename(join(copies, id), join(damaged, 'snapshots', id));
    for (const id of ids) await writeFile(join(damaged, 'snapshots', id, 'snapshot.json'), await readFile(join(archive, 'snapshots', id, 'snapshot.json')));
    await writeFile(join(damaged, 'latest'), `${ids[1]}\n`);
    const lines = [...(await manifestOf(join(damaged, 'snapshots', ids[1]!))).values()];
    const [cut, flipped] = [lines[0]!, lines[1]!];
    await writeFile(join(damaged, 'snapshots', ids[1]!, cut.path), 'short');
    const bytes = await readFile(join(damaged, 'snapshots', ids[1]!, flipped.path));
    bytes[bytes.length - 1] = bytes.at(-1)! ^ 0xff;
    await writeFile(join(damaged, 'snapshots', ids[1]!, flipped.path), bytes);

    const structure = await runCli(['archive', 'check', damaged]);
    expect(structure.code).toBe(3);
    expect(structure.stdout).toContain(`${ids[1]} ${cut.path}: size 5 bytes, the manifest says ${cut.size}`);
    expect(structure.stdout).not.toContain(flipped.path);
    const data = await runCli(['archive', 'check', damaged, '--read-data', '100']);
    expect(data.code).toBe(3);
    expect(data.stdout).toContain(`${ids[1]} ${flipped.path}: sha256 differs from the manifest`);
    const bad = await runCli(['archive', 'check', damaged, '--read-data', '0']);
    expect(bad.code).toBe(2);
  });

  it('forget: no rule is a usage error; --dry-run removes nothing; --keep-last 1 keeps the latest', async () => {
    const none = await runCli(['archive', 'forget', archive]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('give at least one of --keep-last');
    const dry = await runCli(['archive', 'forget', archive, '--keep-last', '1', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`would remove  ${ids[0]}`);
    expect((await readdir(join(archive, 'snapshots'))).sort()).toEqual(ids);
    const real = await runCli(['archive', 'forget', archive, '--keep-last', '1', '--json']);
    expect(real.code, real.stderr).toBe(0);
    expect(JSON.parse(real.stdout).remove.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    expect(await readdir(join(archive, 'snapshots'))).toEqual([ids[1]]);
    expect((await verifyExport(join(archive, 'snapshots', ids[1]!))).problems).toEqual([]);
    expect(existsSync(join(archive, '.wds-lock'))).toBe(false);
  });
});

describe('wds-files run into an archive, SIGKILLed mid-snapshot', () => {
  it('the next run continues the .partial and downloads only what it lacks', async () => {
    const dir = tempDir('wds-archive-kill-');
    const file = join(dir, 'archive.yaml');
    await writeFile(file, [
      'name: kill-test',
      `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
      'from: { service: attachments }',
      'steps:',
      '  - download: { concurrency: 2 }',
      'to: { archive: ./archive }',
      '',
    ].join('\n'));
    const total = (await state(emu())).attachments.length;
    await emu().control('POST', '/faults', { storage: { latency_ms: 60 } });
    const child = spawnCli(['run', file]);
    const ended = finished(child);
    const snapshots = join(dir, 'archive', 'snapshots');
    let partial = '';
    for (let i = 0; i < 400; i += 1) {
      await sleep(25);
      const names = existsSync(snapshots) ? await readdir(snapshots) : [];
      partial = names.find((n) => n.endsWith('.partial')) ?? '';
      if (partial && existsSync(join(snapshots, partial, 'manifest.jsonl')) && (await manifestOf(join(snapshots, partial))).size >= 6) break;
    }
    child.kill('SIGKILL');
    const run = await ended;
    await emu().control('DELETE', '/faults');
    expect(run.signal).toBe('SIGKILL');
    expect(await readdir(snapshots)).toEqual([partial]);
    const present = (await manifestOf(join(snapshots, partial))).size;
    expect(present).toBeGreaterThanOrEqual(6);
    expect(present).toBeLessThan(total);

    await resetStats(emu());
    const rerun = await runCli(['run', file, '--json']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(await storageDownloads(emu())).toBe(total - present);
    const [finishedId] = await readdir(snapshots);
    expect(finishedId!.endsWith('.partial')).toBe(false);
    expect((await readFile(join(dir, 'archive', 'latest'), 'utf8')).trim()).toBe(finishedId);
    const verified = await verifyExport(join(snapshots, finishedId!));
    expect(verified.problems).toEqual([]);
    expect(verified.files).toBe(total);
  }, 60_000);
});

describe('an archive whose latest snapshot is gone', () => {
  it('show says which snapshot stands in for the one latest names', async () => {
    const archive = join(tempDir('wds-archive-gone-'), 'archive');
    const first = (await archiveRun(api(), archive)).snapshot!.id;
    const second = (await archiveRun(api(), archive)).snapshot!.id;
    // Moved out of the archive by hand, as a user clearing space might.
    await rename(join(archive, 'snapshots', second), join(archive, '..', 'moved-out'));
    const show = await runCli(['archive', 'show', archive]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`snapshot ${first}`);
    expect(show.stderr).toContain(`${join(archive, 'latest')} names ${second}, which is not in snapshots/; the newest complete snapshot, ${first}, stands in for it`);
  }, 30_000);
});
