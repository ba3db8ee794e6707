/**
 * What the kernel asks of a snapshot on a given disk: the CPU of the calls an archive run makes for
 * each unchanged file (lstat of the earlier file, mkdir of its member folder, link into it), as a
 * loop of sync calls in one process, one parent folder of `--files` members like a file part's.
 * An incremental run of 20,000 files makes 20,000 of each on threads of its own
 * (src/archive/linker.ts): this is the floor under its time that no change of ours moves.
 *
 *   npx tsx bench/fs-calls.ts                    10,000 files under the system's temporary folder
 *   npx tsx bench/fs-calls.ts --dir /mnt/backup  the disk an archive would live on
 *   npx tsx bench/fs-calls.ts --files 20000 --rounds 5
 *
 * Prints each round's CPU (user + system) per call kind and per file, then the median. The files
 * and folders it makes are removed at the end: on ext4, mkdir is slower for a while after many
 * inodes were freed (bench/notes.md, "Between bench runs"), so rounds run before that.
 */
import { linkSync, lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const FILES = Number(argValue('files') ?? 10_000);
const ROUNDS = Number(argValue('rounds') ?? 3);
if (!Number.isInteger(FILES) || FILES < 1) throw new Error(`--files must be a whole number of 1 or more, got ${argValue('files')}`);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--rounds must be a whole number of 1 or more, got ${argValue('rounds')}`);

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const work = await mkdtemp(join(argValue('dir') ?? tmpdir(), 'wds-fs-calls-'));
try {
  // The earlier snapshot: one file in each member folder of a file part.
  const earlier = join(work, 'earlier', 'attachments', '1', '1204');
  mkdirSync(earlier, { recursive: true });
  for (let i = 0; i < FILES; i += 1) {
    mkdirSync(join(earlier, `M${i}`));
    writeFileSync(join(earlier, `M${i}`, 'contract.pdf'), 'x');
  }
  console.log(`bench/fs-calls: ${FILES} files in one parent folder under ${work}; CPU of sync calls, ms`);
  const rows: { lstat: number; mkdir: number; link: number }[] = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    const target = join(work, `snapshot-${round}`, 'attachments', '1', '1204');
    mkdirSync(target, { recursive: true });
    let at = cpuMs();
    for (let i = 0; i < FILES; i += 1) lstatSync(join(earlier, `M${i}`, 'contract.pdf'));
    const lstat = cpuMs() - at;
    at = cpuMs();
    for (let i = 0; i < FILES; i += 1) mkdirSync(join(target, `M${i}`));
    const mkdir = cpuMs() - at;
    at = cpuMs();
    for (let i = 0; i < FILES; i += 1) linkSync(join(earlier, `M${i}`, 'contract.pdf'), join(target, `M${i}`, 'contract.pdf'));
    const link = cpuMs() - at;
    rows.push({ lstat, mkdir, link });
    const perFile = ((lstat + mkdir + link) * 1000) / FILES;
    console.log(`  round ${round}: lstat ${lstat.toFixed(0)}, mkdir ${mkdir.toFixed(0)}, link ${link.toFixed(0)}; ${perFile.toFixed(1)} µs a file`);
  }
  const m = { lstat: median(rows.map((r) => r.lstat)), mkdir: median(rows.map((r) => r.mkdir)), link: median(rows.map((r) => r.link)) };
  const perFile = (m.lstat + m.mkdir + m.link) / FILES;
  console.log(`median: lstat ${m.lstat.toFixed(0)}, mkdir ${m.mkdir.toFixed(0)}, link ${m.link.toFixed(0)} ms; ${(perFile * 1000).toFixed(1)} µs a file, ${(perFile * 20_000 / 1000).toFixed(2)} s of CPU for a snapshot of 20,000`);
} finally {
  await rm(work, { recursive: true, force: true });
}
