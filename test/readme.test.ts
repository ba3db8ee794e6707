/**
 * The README's command lines, run as written against the sample company: every line of its `sh`
 * blocks is a test here, in the README's order. CLI lines run from a scratch folder with the
 * emulator's address in WDS_BASE_URL (so an import never lands in the throw-away embedded emulator);
 * files a line needs are made first; the emulator lines are started, their banner and answers
 * checked, and stopped with Ctrl-C. A line this file does not know fails, so a new README line
 * comes with its check here.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from './helpers/emulator.js';
import { CLI_MAIN, ROOT, finished, type CliRun } from './helpers/cli-process.js';
import { pdf } from './import/attachment-files.js';
import { SAMPLE_COMPANY_DIR } from '../src/cli/paths.js';
import { parseCsv } from '../src/sources/csv.js';
import { WINDOW_SLACK_MS } from '../src/archive/writes.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const WDS = 'npm run --silent wds -- ';

interface ReadmeLine {
  number: number;
  /** The command without its trailing comment, spaces collapsed. */
  command: string;
  raw: string;
}

/** Every command line of the README's `sh` blocks, with its line number. */
function commandLines(markdown: string): ReadmeLine[] {
  const lines: ReadmeLine[] = [];
  let inShell = false;
  markdown.split('\n').forEach((text, i) => {
    if (text.startsWith('```')) {
      inShell = !inShell && /^```(sh|bash|shell)\s*$/.test(text);
      return;
    }
    const raw = text.trim();
    if (!inShell || raw === '' || raw.startsWith('#')) return;
    lines.push({ number: i + 1, raw, command: raw.replace(/\s+#\s.*$/, '').replace(/\s+/g, ' ').trim() });
  });
  return lines;
}

/** The first ```yaml block after `marker`: the README's example config file. */
function yamlAfter(markdown: string, marker: string): string {
  const from = markdown.indexOf(marker);
  const match = from < 0 ? null : /```yaml\n([\s\S]*?)```/.exec(markdown.slice(from));
  if (!match) throw new Error(`README.md: no yaml block after "${marker}"`);
  return match[1]!;
}

const emu = useEmulator({ seed: SAMPLE_COMPANY_DIR });
const work = mkdtempSync(join(tmpdir(), 'wds-readme-'));
// The README's config file names its seed as samples/company, relative to the config file.
symlinkSync(join(ROOT, 'samples'), join(work, 'samples'));
const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

function env(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-readme-cache-')),
    XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-readme-state-')),
    WDS_BASE_URL: emu().url,
    WDS_CONSUMER_KEY: KEY,
    WDS_CONSUMER_SECRET: SECRET,
    NO_COLOR: '1',
  };
}

function track(child: ChildProcessWithoutNullStreams): ChildProcessWithoutNullStreams {
  children.push(child);
  return child;
}

/** The line through npm itself, in the checkout: what `--silent` leaves on stdout is checked too. */
const throughNpm = (command: string, extra: NodeJS.ProcessEnv = {}): Promise<CliRun> =>
  finished(track(spawn('sh', ['-c', command], { cwd: ROOT, env: { ...env(), ...extra } })));

/**
 * The line's CLI arguments, read by the shell as the user's would be, given to the CLI that the
 * `wds` script runs (its sources, here compiled once for the whole test run: `npm start` above goes
 * through npm and tsx itself), from the scratch folder (npm would run it from the checkout, where
 * the files the line writes do not belong).
 */
const inWork = (command: string): ChildProcessWithoutNullStreams => {
  const args = command.slice(WDS.length);
  return track(spawn('sh', ['-c', `exec "$0" "${CLI_MAIN}" ${args}`, process.execPath], { cwd: work, env: env() }));
};

const state = async (): Promise<{ members: { code: string; photo: { sha256: string } | null }[]; attachments: { sheet_id: number; custom_field_id: number; code: string; file_name: string }[] }> =>
  emu().control('GET', '/state');

/** The file lines of an export folder's manifest (its first line names the source). */
const manifest = (dir: string): { kind: string; code: string; path: string }[] =>
  readFileSync(join(dir, 'manifest.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; code: string; path: string }).filter((l) => l.kind !== 'source');

/**
 * One read through the API of an emulator at `url`, with a token of the given credentials. An
 * emulator started on the real clock answers 503 from 01:00 to 01:30 service time (16:00 to 16:30
 * UTC), as the service does: its clock is then moved past the window through the control API.
 */
async function apiGet(url: string, path: string, key = KEY, secret = SECRET): Promise<{ status: number; body: any }> {
  const { now } = (await (await fetch(`${url}/_emulator/clock`)).json()) as { now: string };
  const minutes = Number(now.slice(11, 13)) * 60 + Number(now.slice(14, 16));
  if (minutes >= 60 && minutes < 90) {
    const moved = await fetch(`${url}/_emulator/clock`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ advance_seconds: (91 - minutes) * 60 }) });
    expect(moved.status).toBe(200);
  }
  const token = await fetch(`${url}/api/v2.0/token`, {
    method: 'POST',
    headers: { Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8' },
    body: 'grant_type=client_credentials',
  });
  expect(token.status).toBe(200);
  const { access_token } = (await token.json()) as { access_token: string };
  const res = await fetch(`${url}/api/v2.0${path}`, { headers: { 'Service-Token': access_token } });
  return { status: res.status, body: res.status === 200 ? await res.json() : await res.text() };
}

/** The checkout's pipelines/ in the scratch folder, as a user's checkout has it. */
function linkPipelines(): void {
  if (!existsSync(join(work, 'pipelines'))) symlinkSync(join(ROOT, 'pipelines'), join(work, 'pipelines'));
}

async function memberCount(url: string): Promise<number> {
  const { status, body } = await apiGet(url, '/members');
  expect(status).toBe(200);
  return (body as { member_data: unknown[] }).member_data.length;
}

/**
 * An emulator line: started from the scratch folder on a free port (8787 may be taken on a shared
 * machine), its banner read up to its address, `check` run against it, then Ctrl-C: it must stop.
 */
async function daemon(command: string, check: (url: string, banner: () => string) => Promise<void>): Promise<void> {
  const line = /--port\b/.test(command) ? command : `${command} --port 0`;
  const child = inWork(line);
  let banner = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (text) => {
      banner += `${text}\n`;
      const found = /https?:\/\/127\.0\.0\.1:\d+/.exec(text);
      if (found) resolve(found[0]);
    });
    child.once('exit', (code) => reject(new Error(`"${command}" exited with ${code} before printing its address:\n${banner}${stderr}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await check(url, () => banner);
  } finally {
    child.kill('SIGINT');
  }
  expect(await exited, stderr).toBe(0);
}

type Handler = (line: ReadmeLine) => Promise<void>;

const expectOk = (run: CliRun, what: string): void => {
  expect(run.code, `${what}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
};

/** Why a line is not run here: each a command of the development loop that this file cannot host. */
const NOT_RUN: Record<string, string> = {
  'npm test': 'the test suite itself',
  'npm run typecheck': 'the type check, run by .ci/run before the suite',
  'npm run lint': 'eslint over the whole tree: minutes on a shared machine, and not a user-visible behaviour',
  'npx tsx bench/storage.ts': 'a benchmark: minutes, and its figures are about the machine',
  'npm run bench': 'the benchmarks: minutes, and their figures are about the machine',
  'npx tsx bench/import.ts': 'a benchmark: minutes, and its figures are about the machine',
  'npx tsx bench/archive.ts': 'a benchmark: minutes and 10 GB of disk, and its figures are about the machine',
  'npx tsx bench/fleet.ts': 'a benchmark: half an hour with PostgreSQL and an S3 server, and its figures are about the machine',
  'npx tsx bench/readers.ts': 'a benchmark: minutes, and its figures are about the machine',
};

const HANDLERS: Record<string, Handler> = {
  // `npm install` would change node_modules under the other tests; the checkout is installed already.
  'npm install && npm start': async () => {
    const out = join(work, 'start-out');
    const run = await throughNpm('npm start', { WDS_OUT: out });
    expectOk(run, 'npm start');
    expect(manifest(join(out, 'photos')).filter((l) => l.kind === 'photo')).toHaveLength(26);
    expect(readFileSync(join(out, 'attachments.zip')).subarray(0, 4).toString('latin1')).toBe('PK\x03\x04');
    expect(run.stdout).toContain(out);
    // The nightly archive pipeline, run twice: the second run downloads nothing, and its snapshot's
    // files are the first one's (hard links: one inode).
    expect(run.stdout).toMatch(/run 2: snapshot \S+: 55 files, 0 new, 0 changed, 55 unchanged, 0 deleted; 0 files downloaded from storage/);
    const snapshots = join(out, 'archive', 'attachments', 'snapshots');
    const [first, second] = readdirSync(snapshots).filter((name) => !name.startsWith('.')).sort();
    const held = manifest(join(snapshots, second!));
    expect(held).toHaveLength(55);
    for (const line of held) expect(statSync(join(snapshots, second!, line.path)).ino).toBe(statSync(join(snapshots, first!, line.path)).ino);
    // Run again, both exports resume: nothing is downloaded, and the zip still verifies.
    const again = await throughNpm('npm start', { WDS_OUT: out });
    expectOk(again, 'npm start (again)');
    expect(again.stdout).toMatch(/photos +0 downloaded, +26 already there, 0 failed; .*verify: 26\/26 match/);
    expect(again.stdout).toMatch(/attachments +0 downloaded, +55 already there, 0 failed; .*verify: 55\/55 match/);
  },
  'npm run --silent wds -- emulator': (l) => daemon(l.command, async (url) => {
    expect(await memberCount(url)).toBe(30);
  }),
  'npm run --silent wds -- emulator --generate 2000': (l) => daemon(l.command, async (url) => {
    expect(await memberCount(url)).toBe(2000);
  }),
  'npm run --silent wds -- emulator --generate 70000 --photo-bytes 8192 --attachments-per-member 2 --attachment-bytes 2048-4096': (l) => daemon(l.command, async (url) => {
    expect(await memberCount(url)).toBe(70000);
    // A photo has the 8,192 bytes the line asks for.
    const { status, body } = await apiGet(url, '/members/face_image');
    expect(status).toBe(200);
    const photo = (body as { member_data: { code: string; download_url: string | null }[] }).member_data.find((m) => m.download_url);
    expect((await (await fetch(photo!.download_url!)).arrayBuffer()).byteLength).toBe(8192);
  }),
  'npm run --silent wds -- emulator --clock-speed 60': (l) => daemon(l.command, async (url) => {
    const clock = (await (await fetch(`${url}/_emulator/clock`)).json()) as { speed: number };
    expect(clock.speed).toBe(60);
  }),
  'npm run --silent wds -- emulator --config companies.yaml --state-dir .emulator-state': async (l) => {
    writeFileSync(join(work, 'companies.yaml'), yamlAfter(README, 'A config file'));
    await daemon(l.command, async (url, banner) => {
      await expect.poll(banner).toContain('acme-key');
      // The sample company, with only the operations the file enables.
      expect(JSON.stringify((await apiGet(url, '/members/face_image', 'acme-key', 'change-me')).body)).toContain('A0001');
      expect((await apiGet(url, '/members', 'acme-key', 'change-me')).status).toBe(403);
    });
    expect(existsSync(join(work, '.emulator-state'))).toBe(true);
  },
  'npm run --silent wds -- photos export --out backup/photos': async (l) => {
    expectOk(await finished(inWork(l.command)), l.raw);
    const lines = manifest(join(work, 'backup/photos'));
    expect(lines).toHaveLength(26);
    for (const line of lines) expect(existsSync(join(work, 'backup/photos', line.path))).toBe(true);
  },
  'npm run --silent wds -- attachments export --out attachments.zip': async (l) => {
    expectOk(await finished(inWork(l.command)), l.raw);
    expect(readFileSync(join(work, 'attachments.zip')).subarray(0, 4).toString('latin1')).toBe('PK\x03\x04');
  },
  'npm run --silent wds -- verify backup/photos': async (l) => {
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(`${run.stdout}${run.stderr}`).toMatch(/26/);
  },
  'npm run --silent wds -- photos import ./new-photos --dry-run': async (l) => {
    // A0017 has no photo (register), A0001 has one (update): both routes, and nothing changes.
    mkdirSync(join(work, 'new-photos'), { recursive: true });
    for (const [code, hue] of [['A0017', 40], ['A0001', 200]] as const) {
      const photo = await sharp({ create: { width: 300, height: 400, channels: 3, background: { r: hue, g: 120, b: 90 } } }).jpeg().toBuffer();
      writeFileSync(join(work, 'new-photos', `${code}.jpg`), photo);
    }
    const before = await state();
    expectOk(await finished(inWork(l.command)), l.raw);
    expect(await state()).toEqual(before);
  },
  'npm run --silent wds -- attachments import ./certificates --sheet 2 --field 1306 --mode add': async (l) => {
    mkdirSync(join(work, 'certificates/A0001'), { recursive: true });
    writeFileSync(join(work, 'certificates/A0001/first-aid-2026.pdf'), pdf(20_000));
    expectOk(await finished(inWork(l.command)), l.raw);
    const held = (await state()).attachments.filter((a) => a.code === 'A0001' && a.sheet_id === 2 && a.custom_field_id === 1306).map((a) => a.file_name);
    expect(held).toContain('first-aid-2026.pdf');
  },
  // The pipeline lines run the checkout's pipelines/ from the scratch folder: their ../out paths land there.
  'npm run --silent wds -- validate pipelines/*.yaml': async (l) => {
    linkPipelines();
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    for (const name of ['nightly-attachments', 'photo-dropbox', 'photos-to-zip']) expect(run.stderr).toContain(`pipelines/${name}.yaml: ok`);
  },
  'npm run --silent wds -- validate --schema > pipeline.schema.json': async (l) => {
    expectOk(await finished(inWork(l.command)), l.raw);
    expect(JSON.parse(readFileSync(join(work, 'pipeline.schema.json'), 'utf8'))).toMatchObject({ title: 'wds-files pipeline file', type: 'object' });
  },
  'npm run --silent wds -- plan pipelines/nightly-attachments.yaml': async (l) => {
    linkPipelines();
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(run.stdout).toMatch(/(\d+) files listed: \1 to download, 0 already in the target/);
    expect(existsSync(join(work, 'out/archive/attachments'))).toBe(false);
  },
  'npm run --silent wds -- run pipelines/nightly-attachments.yaml': async (l) => {
    linkPipelines();
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(run.stdout).toMatch(/snapshot \S+: \d+ files/);
    expect(readFileSync(join(work, 'out/archive/attachments/latest'), 'utf8').trim()).toMatch(/^\d{4}-\d{2}-\d{2}T\d{6}/);
  },
  // The archive lines read the archive the nightly pipeline's line above made in the scratch folder.
  'npm run --silent wds -- archive list out/archive/attachments': async (l) => {
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(run.stdout).toMatch(/\d{4}-\d{2}-\d{2}T\d{6}\s+yes\s+\d+/);
  },
  'npm run --silent wds -- archive show out/archive/attachments latest': async (l) => {
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(run.stdout).toContain(readFileSync(join(work, 'out/archive/attachments/latest'), 'utf8').trim());
  },
  'npm run --silent wds -- archive diff out/archive/attachments latest~1 latest': async (l) => {
    // A second night with one attachment replaced, so that there is a previous snapshot and a change to name.
    const all = (await state()).attachments;
    const key = (a: (typeof all)[number]): string => `${a.sheet_id}/${a.custom_field_id}/${a.code}/${a.file_name}`;
    // A name the member holds once: partial update replaces it (a name held twice it cannot target).
    const held = all.find((a) => all.filter((b) => key(b) === key(a)).length === 1)!;
    const answer = await emu().api('PATCH', `/sheets/${held.sheet_id}/custom_fields/${held.custom_field_id}/file`, {
      member_data: [{ code: held.code, records: [{ file_name: held.file_name, base64_content: pdf(4321).toString('base64') }] }],
    });
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
    await emu().waitTask(answer.body.task_id);
    expectOk(await finished(inWork(`${WDS}run pipelines/nightly-attachments.yaml`)), 'second nightly run');
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(run.stdout).toContain(held.code);
    expect(run.stdout).toContain(held.file_name);
  },
  'npm run --silent wds -- archive restore out/archive/attachments latest --out restored.zip': async (l) => {
    expectOk(await finished(inWork(l.command)), l.raw);
    expectOk(await finished(inWork(`${WDS}verify restored.zip`)), 'verify restored.zip');
  },
  'npm run --silent wds -- archive restore out/archive/attachments latest --member A0003 --out A0003': async (l) => {
    expectOk(await finished(inWork(l.command)), l.raw);
    expectOk(await finished(inWork(`${WDS}verify A0003`)), 'verify A0003');
    const codes = new Set(manifest(join(work, 'A0003')).map((line) => line.code));
    expect([...codes]).toEqual(['A0003']);
  },
  'npm run --silent wds -- archive check out/archive/attachments --read-data 10': async (l) => {
    expectOk(await finished(inWork(l.command)), l.raw);
  },
  'npm run --silent wds -- archive repair out/archive/attachments --emulator': async (l) => {
    // A byte of the newest snapshot's first file overwritten, as a careless editor would: repair puts the service's bytes back.
    const snapshot = join(work, 'out/archive/attachments/snapshots', readFileSync(join(work, 'out/archive/attachments/latest'), 'utf8').trim());
    const file = join(snapshot, manifest(snapshot)[0]!.path);
    const bytes = readFileSync(file);
    const damaged = Buffer.from(bytes);
    damaged[0] = damaged[0]! ^ 0xff;
    chmodSync(file, 0o644);
    writeFileSync(file, damaged);
    // A change within the 2 s of slack before a command's own write window is taken for its own.
    await new Promise((r) => setTimeout(r, WINDOW_SLACK_MS + 500));
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(run.stdout + run.stderr).toContain('1 repaired');
    expect(readFileSync(file)).toEqual(bytes);
  },
  'npm run --silent wds -- archive forget out/archive/attachments --keep-daily 7 --keep-weekly 4 --dry-run': async (l) => {
    const before = readFileSync(join(work, 'out/archive/attachments/latest'), 'utf8');
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(readFileSync(join(work, 'out/archive/attachments/latest'), 'utf8')).toBe(before);
  },
  'npm run --silent wds -- api GET /members/face_image': async (l) => {
    const run = await throughNpm(l.command);
    expectOk(run, l.raw);
    // Only the answer on stdout, so that it can be piped into jq.
    expect(JSON.stringify(JSON.parse(run.stdout))).toContain('A0001');
  },
  'npm run --silent wds -- api POST /members/delete --data \'{"codes":["A0001"]}\' --dry-run --wait': async (l) => {
    const run = await throughNpm(l.command);
    expectOk(run, l.raw);
    expect(run.stdout).toContain('OK');
    expect((await state()).members.map((m) => m.code)).toContain('A0001');
  },
  // The legacy lines take a token each, of the 5 the legacy interface issues in 60 minutes.
  'npm run --silent wds -- legacy sheet 0 --out members.csv': async (l) => {
    expectOk(await finished(inWork(l.command)), l.raw);
    const csv = readFileSync(join(work, 'members.csv'));
    expect(csv.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    const codes = (await state()).members.map((m) => m.code);
    // The labels, then one row per member.
    const rows = parseCsv(csv.subarray(3).toString('utf8')).map((r) => r.fields);
    expect(rows).toHaveLength(codes.length + 1);
    expect(rows.slice(1).map((r) => r[0]).sort()).toEqual([...codes].sort());
  },
  'npm run --silent wds -- legacy sheet 0 --out members.jsonl --async': async (l) => {
    const run = await finished(inWork(l.command));
    expectOk(run, l.raw);
    expect(run.stderr).toContain('sheet 0: OK');
    const records = readFileSync(join(work, 'members.jsonl'), 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as { member_code: string });
    expect(records.map((r) => r.member_code).sort()).toEqual((await state()).members.map((m) => m.code).sort());
  },
  'npm run --silent wds -- legacy api /department': async (l) => {
    const run = await throughNpm(l.command);
    expectOk(run, l.raw);
    // Only the answer on stdout, so that it can be piped into jq.
    const answer = JSON.parse(run.stdout) as { status: string; departments: { department_code1: string }[] };
    expect(answer.status).toBe('OK');
    expect(answer.departments.map((d) => d.department_code1)).toContain('1000');
  },
};

const lines = commandLines(README);

describe('README.md command lines', () => {
  it('has command lines to run', () => {
    expect(lines.filter((l) => l.command.startsWith(WDS)).length).toBeGreaterThan(5);
  });

  for (const line of lines) {
    const reason = NOT_RUN[line.command];
    if (reason) {
      it.skip(`line ${line.number}: ${line.command} (not run: ${reason})`, () => {});
      continue;
    }
    it(`line ${line.number}: ${line.command}`, async () => {
      const handler = HANDLERS[line.command];
      if (!handler) throw new Error(`README.md line ${line.number} is a command test/readme.test.ts does not know how to run: "${line.command}"; add it there`);
      await handler(line);
    }, 90_000);
  }

});
