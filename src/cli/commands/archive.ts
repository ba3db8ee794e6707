/**
 * `wds-files archive list|show|diff|restore|check|repair|forget <ARCHIVE> ...` (DESIGN.md section 10):
 * thin commands over src/archive. list, show, diff and check only read (check records what
 * --read-data finds damaged); restore locks its output as an export does, forget and repair lock
 * the archive (`<archive>/.wds-lock`).
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { UsageError, withConnection, type ConnectionArgs } from '../connection.js';
import { EXIT } from '../exit-codes.js';
import { currentEnding, finishRun, withEnding, type ReportBody } from '../ending.js';
import { withTargetOptions, type TargetArgs } from '../target-options.js';
import { stopSignal } from '../stop-signal.js';
import { formatBytes } from '../../util/format.js';
import { formatDuration, parseDuration } from '../../util/duration.js';
import type { RetentionPolicy } from '../../archive/retention.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';
import type { ArchiveStore } from '../../archive/archive-store.js';
import type { BucketStore } from '../../archive/bucket/store.js';

// src/archive and the lock code are loaded by the handlers: defining these commands loads neither.
const store = () => import('../../archive/store.js');
const preflightOf = async (argv: { quiet?: boolean }) => new (await import('../preflight.js')).Preflight(argv);

interface ArchiveArgs {
  archive: string;
  json: boolean;
  report?: string;
  quiet?: boolean;
  's3-endpoint'?: string;
  's3-region'?: string;
  's3-path-style'?: boolean;
}

/** The archive and `--json`; `report` describes what `--report` writes, for all but restore (which has a per-file report). */
const withArchive = <T>(y: Argv<T>, report?: string): Argv<T & ArchiveArgs> => {
  const b = withS3(y.positional('archive', { type: 'string', demandOption: true, describe: 'The archive folder (the one holding snapshots/ and latest), or s3://BUCKET/PREFIX' })
    .option('json', { type: 'boolean', default: false, describe: 'One JSON document on stdout' }));
  return (report ? b.option('report', { type: 'string', describe: report }) : b) as unknown as Argv<T & ArchiveArgs>;
};

/** `--s3-*`: how to reach a bucket archive, where the AWS SDK's own settings do not say. */
const withS3 = <T>(y: Argv<T>): Argv<T> => y
  .option('s3-endpoint', { type: 'string', describe: 'For an s3:// archive: the S3 endpoint URL (default: AWS_ENDPOINT_URL_S3, else AWS)' })
  .option('s3-region', { type: 'string', describe: 'For an s3:// archive: the region (default: AWS_REGION, else us-east-1)' })
  .option('s3-path-style', { type: 'boolean', describe: 'For an s3:// archive: address the bucket in the path, as most S3-compatible servers want' }) as unknown as Argv<T>;

const s3Of = (argv: Pick<ArchiveArgs, 's3-endpoint' | 's3-region' | 's3-path-style'>) => ({
  ...(argv['s3-endpoint'] ? { endpoint: argv['s3-endpoint'] } : {}),
  ...(argv['s3-region'] ? { region: argv['s3-region'] } : {}),
  ...(argv['s3-path-style'] !== undefined ? { force_path_style: argv['s3-path-style'] } : {}),
});

const isBucket = (archive: string): boolean => archive.toLowerCase().startsWith('s3://');

/** Runs an archive command with its `--report`, which may not be a file inside the archive. */
function reported(argv: ArchiveArgs, command: string, work: (report: ReportBody) => Promise<void>): Promise<void> {
  return withEnding(argv, `archive ${command}`, async (ending) => {
    await ending.checkReport(isBucket(argv.archive) ? [] : [{ path: argv.archive, folder: true, what: 'the archive' }]);
    await work(ending.body);
  });
}

/** The archive folder, which must hold `snapshots/`. */
async function archiveDir(path: string): Promise<string> {
  if (isBucket(path)) throw new UsageError(`${path}: this command works on folder archives only`);
  const dir = resolve(path);
  const { snapshotsDir } = await store();
  const info = await stat(snapshotsDir(dir)).catch(() => null);
  if (!info?.isDirectory()) throw new UsageError(`${path} is not a snapshot archive: it has no snapshots/ folder`);
  return dir;
}

/** The archive the user named, a folder (which must hold `snapshots/`) or a bucket archive. */
async function archiveStore(argv: Pick<ArchiveArgs, 'archive' | 's3-endpoint' | 's3-region' | 's3-path-style'>, path = argv.archive) {
  const { openArchiveStore } = await import('../../archive/open-store.js');
  if (!isBucket(path)) return openArchiveStore(await archiveDir(path));
  try {
    return await openArchiveStore(path, s3Of(argv));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** A snapshot the user named, or a usage error naming what the archive holds. */
async function snapshotArg(archive: string | ArchiveStore, ref: string | undefined) {
  const { findSnapshot } = await store();
  try {
    const found = typeof archive === 'string' ? await findSnapshot(archive, ref) : await archive.findSnapshot(ref);
    if (found.note) process.stderr.write(`wds-files: ${found.note}\n`);
    return found;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** The command's result: its JSON document under --json (said with the command's ending), else `text`; `counts` head both. */
const print = (value: Record<string, unknown>, text: () => string[], counts: Record<string, number>): void => {
  const ending = currentEnding();
  ending.counts = counts;
  ending.print(value, text);
};

const listCommand = leafCommand<ArchiveArgs>({
  command: 'list <archive>',
  describe: 'The snapshots: id, complete, files, new files, bytes',
  builder: (y: Argv) => withArchive(y, 'Write the snapshots, as --json prints them, to FILE'),
  handler: (argv) => reported(argv, 'list', async (report) => {
    const archive = await archiveStore(argv);
    const dir = archive.where;
    const { snapshots, partial } = await archive.listSnapshots();
    const latest = await archive.readLatest();
    archive.close();
    const rows = snapshots.map((s) => ({
      id: s.id, complete: s.doc?.complete ?? null, files: s.doc?.counts.files ?? null, new: s.doc ? s.doc.counts.new + s.doc.counts.changed : null,
      bytes: s.doc?.bytes.total ?? null, latest: s.id === latest, ...(s.doc?.held ? { held: s.doc.held } : {}), ...(s.problem ? { problem: s.problem } : {}),
    }));
    // The id column fits its longest name (a `.partial` of a second run in one second is 27 characters).
    const width = Math.max(22, ...rows.map((r) => r.id.length + 2), ...partial.map((id) => id.length + 10));
    const value = { archive: dir, latest, snapshots: rows, partial };
    Object.assign(report, value);
    print(value, () => [
      `${'ID'.padEnd(width)}${'COMPLETE'.padEnd(10)}${'FILES'.padStart(8)}${'NEW'.padStart(8)}${'BYTES'.padStart(12)}`,
      ...rows.map((r) => r.problem
        ? `${r.id.padEnd(width)}${r.problem}`
        : `${r.id.padEnd(width)}${(r.held ? 'held' : r.complete ? 'yes' : 'no').padEnd(10)}${String(r.files).padStart(8)}${String(r.new).padStart(8)}${formatBytes(r.bytes ?? 0).padStart(12)}${r.latest ? '  (latest)' : ''}`),
      ...partial.map((id) => `${`${id}.partial`.padEnd(width)}being built, or left by an interrupted run; the next run continues it`),
    ], { snapshots: rows.length, partial: partial.length });
  }),
}, {
  examples: [
    ['wds-files archive list /srv/backup/attachments', 'every snapshot: id, complete or not, files, new files, bytes'],
    ['wds-files archive list /srv/backup/attachments --json', 'the same as JSON'],
  ],
  exits: { 1: 'the archive cannot be read', 2: 'a bad option, or the folder is no snapshot archive' },
  env: [],
});

interface ShowArgs extends ArchiveArgs { snapshot?: string }

const showCommand = leafCommand<ShowArgs>({
  command: 'show <archive> [snapshot]',
  describe: 'One snapshot (@ID; default the latest): its snapshot.json and what it holds',
  builder: (y: Argv) => withArchive(y, 'Write the snapshot, as --json prints it, to FILE').positional('snapshot', { type: 'string', describe: '@ID, latest or latest~N (the Nth complete snapshot before latest)' }) as unknown as Argv<ShowArgs>,
  handler: (argv) => reported(argv, 'show', async (report) => {
    const archive = await archiveStore(argv);
    const snapshot = await snapshotArg(archive, argv.snapshot);
    const { summarizeSnapshot } = await import('../../archive/show.js');
    const { files, members, photos, attachments } = await summarizeSnapshot(archive, snapshot).finally(() => archive.close());
    const summary = { members, photos, attachments };
    const value = { id: snapshot.id, path: snapshot.dir, snapshot: snapshot.doc, problem: snapshot.problem, summary };
    Object.assign(report, value);
    print(value, () => {
      const d = snapshot.doc;
      if (!d) return [`${snapshot.id}: ${snapshot.problem}`];
      const c = d.counts;
      return [
        `snapshot ${snapshot.id} (${snapshot.dir})`,
        `  pipeline ${d.pipeline}; ${d.started_at} to ${d.finished_at}; ${d.complete ? d.held ? `complete, held back: ${d.held}` : 'complete' : `incomplete: ${c.failed} files failed`}`,
        `  ${c.files} files, ${formatBytes(d.bytes.total)}: ${c.new} new, ${c.changed} changed, ${c.unchanged} unchanged (${d.unchanged_files ?? 'hard links'}), ${c.repaired ? `${c.repaired} repaired, ` : ''}${c.deleted} deleted since ${d.previous ?? 'nothing (the first snapshot)'}; ${formatBytes(d.bytes.new)} new`,
        `  ${members} members: ${photos} photos${Object.entries(attachments).map(([part, n]) => `, ${n} attachments in ${part}`).join('')}`,
      ];
    }, { files, members });
  }),
}, {
  examples: [
    ['wds-files archive show /srv/backup/attachments', 'the latest snapshot: its snapshot.json and what it holds'],
    ['wds-files archive show /srv/backup/attachments latest~1', 'the complete snapshot before it'],
  ],
  exits: { 1: 'the archive cannot be read', 2: 'a bad option, or no such archive or snapshot' },
  env: [],
});

interface DiffArgs extends ArchiveArgs { a: string; b: string }

const diffCommand = leafCommand<DiffArgs>({
  command: 'diff <archive> <a> <b>',
  describe: 'Files added, changed and deleted from snapshot A to snapshot B, by member',
  builder: (y: Argv) => withArchive(y, 'Write the files added, changed and deleted, as --json prints them, to FILE').positional('a', { type: 'string', demandOption: true, describe: '@ID, latest or latest~N' }).positional('b', { type: 'string', demandOption: true, describe: '@ID, latest or latest~N (the Nth complete snapshot before latest)' }) as unknown as Argv<DiffArgs>,
  handler: (argv) => reported(argv, 'diff', async (report) => {
    const archive = await archiveStore(argv);
    const [a, b] = [await snapshotArg(archive, argv.a), await snapshotArg(archive, argv.b)];
    const { diffSnapshots } = await import('../../archive/diff.js');
    const diff = await diffSnapshots(archive, a.id, b.id);
    archive.close();
    const mark = { added: '+', changed: 'M', deleted: '-' } as const;
    const value = { from: diff.from, to: diff.to, counts: diff.counts, members: diff.members.map((m) => ({ code: m.code, files: m.files.map((f) => ({ change: f.change, ...f.line })) })) };
    Object.assign(report, value);
    print(value, () => [
      `${diff.from} -> ${diff.to}: ${diff.counts.added} added, ${diff.counts.changed} changed, ${diff.counts.deleted} deleted, in ${diff.members.length} members`,
      ...diff.members.flatMap((m) => [`member ${m.code}`, ...m.files.map((f) => `  ${mark[f.change]} ${f.line.path}`)]),
    ], { ...diff.counts });
  }),
}, {
  examples: [
    ['wds-files archive diff /srv/backup/attachments latest~1 latest', 'the files added, changed and deleted by the last run, by member'],
  ],
  exits: { 1: 'the archive cannot be read', 2: 'a bad option, or no such archive or snapshot' },
  env: [],
});

interface RestoreArgs extends ArchiveArgs, TargetArgs { snapshot?: string; out: string; report?: string; member?: string[] }

const restoreCommand = leafCommand<RestoreArgs>({
  command: 'restore <archive> [snapshot]',
  describe: 'Copy a snapshot (@ID; default the latest) out as an export folder or zip',
  builder: (y: Argv) => withTargetOptions(withArchive(y))
    .positional('snapshot', { type: 'string', describe: '@ID, latest or latest~N (the Nth complete snapshot before latest)' })
    .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'A folder, or a file ending in .zip' })
    .option('member', { type: 'string', array: true, describe: 'Only the files of this member (by code); give it again for more' })
    .option('report', { type: 'string', describe: 'Write the per-file report (JSON) to FILE' }) as unknown as Argv<RestoreArgs>,
  handler: (argv) => withEnding(argv, 'archive restore', async (ending) => {
    ending.runsFiles();
    const out = resolve(argv.out);
    await ending.checkReport([{ path: argv.out, folder: !out.toLowerCase().endsWith('.zip'), what: 'the restore' }, ...(isBucket(argv.archive) ? [] : [{ path: argv.archive, folder: true, what: 'the archive' }])]);
    const archive = await archiveStore(argv);
    const snapshot = await snapshotArg(archive, argv.snapshot);
    const { mixedRestoreProblem, planRestore, restoreSnapshot, UnknownMembersError } = await import('../../archive/restore.js');
    const members = argv.member?.map(String);
    // Marked as read before anything of it is: forget and a run's retention leave it until the
    // restore ends, in a folder (`.wds-readers/`) as in a bucket (`readers/`).
    const reading = archive.kind === 'folder'
      ? await (await import('../../archive/readers.js')).markReading(archive.where, snapshot.id, snapshot.dir)
      : await (await import('../../archive/bucket/readers.js')).markBucketReading(archive as BucketStore, snapshot.id);
    const preflight = await preflightOf(argv);
    let plan: Awaited<ReturnType<typeof planRestore>> | undefined;
    try {
      // Planned before the target is touched: a code the snapshot does not hold makes nothing there.
      plan = await planRestore(snapshot, members, archive).catch((error: unknown) => {
        throw error instanceof UnknownMembersError ? new UsageError(error.message) : error;
      });
      const mixed = await mixedRestoreProblem(plan, out, out.toLowerCase().endsWith('.zip'));
      if (mixed) throw new UsageError(`--out ${mixed}`);
      const lock = await preflight.exportTarget(argv.out, { zip: out.toLowerCase().endsWith('.zip'), force: argv.force ?? false, waitLock: argv['wait-lock'] });
      const result = await restoreSnapshot(plan, out, { signal: stopSignal(), lock, keepItems: argv.report !== undefined });
      const whose = members ? ` (the files of ${members.join(', ')})` : '';
      finishRun(result.report, { snapshot: result.snapshot, out, ...(members ? { members } : {}) }, [`snapshot ${result.snapshot}${whose} restored to ${out}`, ...result.report.notes]);
    } finally {
      await plan?.close();
      await preflight.end();
      await reading?.release();
      archive.close();
    }
  }),
}, {
  examples: [
    ['wds-files archive restore /srv/backup/attachments --out restored/', 'the latest snapshot copied out as an export folder'],
    ['wds-files archive restore /srv/backup/attachments @2026-04-01T020000 --out old.zip --member A0001', 'one member\'s files of an older snapshot, as a zip'],
  ],
  exits: { 3: 'finished, but some files could not be copied (see --report)', 130: true, 143: true },
  env: [],
});

interface CheckArgs extends ArchiveArgs { 'read-data'?: number }

const checkCommand = leafCommand<CheckArgs>({
  command: 'check <archive>',
  describe: 'Check every snapshot: each file its manifest lists is there with its size; --read-data also hashes a share of the files',
  builder: (y: Argv) => withArchive(y, 'Write each snapshot and file problem found, as --json prints them, to FILE').option('read-data', { type: 'number', describe: 'Read PERCENT (1-100) of the files, chosen at random, and check their sha256' })
    .check((args) => {
      const p = args['read-data'];
      if (p !== undefined && !(typeof p === 'number' && p > 0 && p <= 100)) throw new UsageError(`--read-data must be a percentage from 1 to 100, got ${String(p)}`);
      return true;
    }) as unknown as Argv<CheckArgs>,
  handler: (argv) => reported(argv, 'check', async (report) => {
    const archive = await archiveStore(argv);
    const dir = archive.where;
    const { damaged, ...result } = archive.kind === 'bucket'
      ? await (await import('../../archive/bucket/check.js')).checkBucketArchive(archive as BucketStore, { readDataPercent: argv['read-data'] }).finally(() => archive.close())
      : await (await import('../../archive/check.js')).checkArchive(dir, { readDataPercent: argv['read-data'] });
    Object.assign(report, { archive: dir, read_data_percent: argv['read-data'] ?? null, ...result });
    if (result.problems.length) report.outcome = 'problems';
    print({ archive: dir, ...result }, () => [
      `check ${dir}: ${result.snapshots} snapshots, ${result.files} files listed${argv['read-data'] ? `, ${result.read} files read` : ''}; ${result.problems.length ? `${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}:` : 'no problem found'}`,
      ...result.problems.map((p) => `  ${p.snapshot}${p.path ? ` ${p.path}` : ''}: ${p.problem}`),
      ...result.partial.map((id) => `  ${id}.partial: being built, or left by an interrupted run`),
      ...(result.change_times || archive.kind === 'bucket' ? [] : ['  change times not compared: no run of this version has written in the archive yet']),
      ...(result.unrecorded ? [`  the damaged files could not be recorded in the archive for the next run (${result.unrecorded}); the next run may link them forward`] : []),
      ...(damaged.length ? [`  wds-files archive repair ${argv.archive} downloads fresh copies of the files the service still holds unchanged`] : []),
    ], { snapshots: result.snapshots, files: result.files, read: result.read, problems: result.problems.length });
    if (result.problems.length) process.exitCode = EXIT.partial;
  }),
}, {
  examples: [
    ['wds-files archive check /srv/backup/attachments', 'every file each manifest lists is there, with its size'],
    ['wds-files archive check /srv/backup/attachments --read-data 10', 'also hash a tenth of the files, chosen at random'],
  ],
  exits: { 0: 'no problem found', 1: 'the archive cannot be read', 3: 'a problem found (each one named)' },
  env: [],
});

interface ForgetArgs extends ArchiveArgs {
  'keep-last'?: number; 'keep-daily'?: number; 'keep-weekly'?: number; 'keep-monthly'?: number; 'keep-yearly'?: number;
  'dry-run': boolean; 'wait-lock'?: string; 'unused-older-than'?: string;
}

const RULES = ['last', 'daily', 'weekly', 'monthly', 'yearly'] as const;

async function policyOf(argv: ForgetArgs): Promise<RetentionPolicy> {
  const { hasRules, retentionPolicySchema } = await import('../../archive/retention.js');
  const raw = Object.fromEntries(RULES.filter((r) => argv[`keep-${r}`] !== undefined).map((r) => [`keep_${r}`, argv[`keep-${r}`]]));
  const parsed = retentionPolicySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`--${String(issue.path[0]).replace('_', '-')} ${issue.message}, got ${String(raw[String(issue.path[0])])}`);
  }
  if (!hasRules(parsed.data)) throw new UsageError('give at least one of --keep-last, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly with a count of 1 or more; forget removes nothing without one');
  return parsed.data;
}

const forgetCommand = leafCommand<ForgetArgs>({
  command: 'forget <archive>',
  describe: 'Remove the snapshots the --keep-* rules do not keep (the newest complete one always stays)',
  builder: (y: Argv) => {
    let b = withArchive(y, 'Write each snapshot kept (and by which rule) or removed (and why) as JSON to FILE; with --dry-run, what would be removed').option('wait-lock', { type: 'string', describe: 'If a run is writing the archive, wait for it up to DURATION (30s, 5m, 1h) instead of refusing' })
      .check((args) => {
        const wait = args['wait-lock'];
        if (wait !== undefined && parseDuration(String(wait)) === null) throw new UsageError(`--wait-lock must be a duration such as 30s, 5m or 1h, got "${wait}"`);
        return true;
      }) as unknown as Argv<ForgetArgs>;
    for (const r of RULES) b = b.option(`keep-${r}`, { type: 'number', describe: r === 'last' ? 'Keep the N newest complete snapshots' : `Keep the newest snapshot of each of the last N ${r === 'daily' ? 'days' : r.replace('ly', 's')} that have one` });
    return b.option('dry-run', { type: 'boolean', default: false, describe: 'List what would be removed; remove nothing' })
      .option('unused-older-than', { type: 'string', describe: 'For an s3:// archive: delete objects no kept snapshot names only once they are this old (default 1d: a run may be uploading them)' })
      .check((args) => {
        const age = args['unused-older-than'];
        if (age !== undefined && parseDuration(String(age)) === null) throw new UsageError(`--unused-older-than must be a duration such as 0s, 12h or 1d, got "${age}"`);
        return true;
      }) as unknown as Argv<ForgetArgs>;
  },
  handler: (argv) => withEnding(argv, 'archive forget', async (ending) => {
    // The rules are the command line's, checked before the report is: a usage error writes none (its JSON line says it).
    const policy = await policyOf(argv);
    await ending.checkReport(isBucket(argv.archive) ? [] : [{ path: argv.archive, folder: true, what: 'the archive' }]);
    const report = ending.body;
    Object.assign(report, { dry_run: argv['dry-run'], policy });
    if (isBucket(argv.archive)) return forgetBucket(argv, policy, report);
    const dir = await archiveDir(argv.archive);
    report.archive = dir;
    const { forgetSnapshots } = await import('../../archive/forget.js');
    const preflight = await preflightOf(argv);
    try {
      const lock = argv['dry-run'] ? undefined : await preflight.exportTarget(dir, { zip: false, force: false, waitLock: argv['wait-lock'], archive: true });
      const result = await forgetSnapshots(dir, policy, { dryRun: argv['dry-run'], lock });
      // One list, newest first: each snapshot with what became of it and why.
      report.snapshots = [
        ...result.decision.keep.map((k) => ({ id: k.id, action: 'keep', reasons: k.reasons })),
        ...result.decision.remove.map((r) => ({ id: r.id, action: argv['dry-run'] ? 'would remove' : 'removed', reasons: [r.reason] })),
      ].sort((x, y) => (x.id < y.id ? 1 : x.id > y.id ? -1 : 0));
      const verb = argv['dry-run'] ? 'would remove' : 'removed';
      print({ archive: dir, dry_run: argv['dry-run'], policy, keep: result.decision.keep, remove: result.decision.remove, busy: result.busy }, () => [
        `forget ${dir}: keep ${result.keep.length}, ${verb} ${result.remove.length}${result.busy.length ? ` (${result.busy.length} kept while being read)` : ''}`,
        ...result.decision.keep.map((k) => `  keep    ${k.id}  ${k.reasons.join(', ')}`),
        ...result.decision.remove.map((r) => `  ${argv['dry-run'] ? 'would remove' : 'remove'}  ${r.id}  ${r.reason}`),
      ], { keep: result.keep.length, [argv['dry-run'] ? 'would_remove' : 'removed']: result.remove.length, busy: result.busy.length });
    } finally {
      await preflight.end();
    }
  }),
}, {
  examples: [
    ['wds-files archive forget /srv/backup/attachments --keep-daily 7 --keep-monthly 12 --dry-run', 'what those rules would remove; nothing removed'],
    ['wds-files archive forget /srv/backup/attachments --keep-last 5', 'keep the five newest complete snapshots'],
  ],
  exits: { 1: 'the archive cannot be changed (a run holds it, say)' },
  env: [],
});

/** `archive forget` of a bucket archive: snapshots, then the objects no kept snapshot names (src/archive/bucket/forget.ts). */
async function forgetBucket(argv: ForgetArgs, policy: RetentionPolicy, report: ReportBody): Promise<void> {
  const archive = await archiveStore(argv) as BucketStore;
  report.archive = archive.where;
  const { forgetBucketSnapshots, DEFAULT_UNUSED_AGE_MS } = await import('../../archive/bucket/forget.js');
  const preflight = await preflightOf(argv);
  try {
    const lock = argv['dry-run'] ? undefined : await preflight.bucketArchive(archive, argv['wait-lock']);
    const age = argv['unused-older-than'] === undefined ? DEFAULT_UNUSED_AGE_MS : parseDuration(argv['unused-older-than'])!;
    const result = await forgetBucketSnapshots(archive, policy, { dryRun: argv['dry-run'], lock, unusedOlderThanMs: age });
    const dry = argv['dry-run'];
    report.snapshots = [
      ...result.decision.keep.map((k) => ({ id: k.id, action: 'keep', reasons: k.reasons })),
      ...result.decision.remove.map((r) => ({ id: r.id, action: dry ? 'would remove' : 'removed', reasons: [r.reason] })),
    ].sort((x, y) => (x.id < y.id ? 1 : x.id > y.id ? -1 : 0));
    Object.assign(report, { objects: result.objects, locked: result.locked, extended: result.extended, requests: archive.bucket.requests });
    const o = result.objects;
    print({ archive: archive.where, dry_run: dry, policy, keep: result.decision.keep, remove: result.decision.remove, locked: result.locked, objects: o, extended: result.extended, requests: archive.bucket.requests }, () => [
      `forget ${archive.where}: keep ${result.keep.length}, ${dry ? 'would remove' : 'removed'} ${result.remove.length}${result.locked.length ? ` (${result.locked.length} kept: still locked)` : ''}`,
      ...result.decision.keep.map((k) => `  keep    ${k.id}  ${k.reasons.join(', ')}`),
      ...result.decision.remove.map((r) => `  ${dry ? 'would remove' : 'remove'}  ${r.id}  ${r.reason}`),
      `  objects no kept snapshot names: ${dry ? 'would delete' : 'deleted'} ${o.removed}; left ${o.young} younger than ${formatDuration(age)}${o.locked ? `, ${o.locked} still locked (Object Lock): not deleted` : ''}`,
      ...(result.extended.objects ? [`  Object Lock extended for ${result.extended.objects} objects of ${result.extended.snapshots.length} kept snapshots`] : []),
    ], { keep: result.keep.length, [dry ? 'would_remove' : 'removed']: result.remove.length, locked: result.locked.length, objects_removed: o.removed, objects_locked: o.locked });
  } finally {
    await preflight.end();
    archive.close();
  }
}

/**
 * Why `repair` leaves bucket archives alone: what it mends in a folder (a file changed in place,
 * a change time out of place) cannot happen to an object, written once under its sha256 and
 * checked before a snapshot names it; a damaged object is the storage's fault, and under Object
 * Lock its bytes cannot be replaced at all.
 */
const BUCKET_REPAIR = 'archive repair works on folder archives only: a bucket archive\'s objects are written once, each under its sha256 and checked before a snapshot names it, and are never changed in place (under Object Lock they cannot be). '
  + 'archive check --read-data 100 names any object whose bytes the storage changed; keep a second copy of the archive (archive copy) to restore such files from';

interface RepairArgs extends ArchiveArgs, Omit<ConnectionArgs, 'json' | 'quiet'> { 'wait-lock'?: string; emulator: boolean }

const repairCommand = leafCommand<RepairArgs>({
  command: 'repair <archive>',
  describe: 'Replace the files check finds damaged with fresh copies from the service, where it still holds them unchanged',
  builder: (y: Argv) => withConnection(withArchive(y, 'Write each file repaired, or not repaired and why, as JSON to FILE'))
    .option('wait-lock', { type: 'string', describe: 'If a run is writing the archive, wait for it up to DURATION (30s, 5m, 1h) instead of refusing' })
    .option('emulator', { type: 'boolean', default: false, describe: 'With no --base-url, repair from the embedded emulator\'s sample company all the same' })
    .check((args) => {
      const wait = args['wait-lock'];
      if (wait !== undefined && parseDuration(String(wait)) === null) throw new UsageError(`--wait-lock must be a duration such as 30s, 5m or 1h, got "${wait}"`);
      return true;
    }) as unknown as Argv<RepairArgs>,
  handler: (argv) => reported(argv, 'repair', async (report) => {
    if (isBucket(argv.archive)) throw new UsageError(BUCKET_REPAIR);
    const dir = await archiveDir(argv.archive);
    report.archive = dir;
    // The sample company of the embedded emulator holds none of the archive's files.
    if (!(argv['base-url'] ?? process.env.WDS_BASE_URL) && !argv.emulator) {
      throw new UsageError('archive repair downloads from the service the archive was made from: give its --base-url (or WDS_BASE_URL) with the consumer key and secret; --emulator repairs from the embedded emulator\'s sample company');
    }
    const preflight = await preflightOf(argv);
    try {
      const lock = await preflight.exportTarget(dir, { zip: false, force: false, waitLock: argv['wait-lock'], archive: true });
      const [{ repairArchive }, { connect }] = await Promise.all([import('../../archive/repair.js'), import('../connection.js')]);
      const connection = await connect(argv);
      try {
        const result = await repairArchive(dir, { client: connection.client, lock, signal: stopSignal() });
        const downloaded = result.repaired.filter((f) => f.how === 'downloaded').length;
        Object.assign(report, result);
        if (result.unrepaired.length || result.other.length) report.outcome = 'problems';
        print({ archive: dir, ...result }, () => [
          `repair ${dir}: ${result.damaged} damaged file${result.damaged === 1 ? '' : 's'}, ${result.repaired.length} repaired (${downloaded} downloaded again, ${result.repaired.length - downloaded} intact but for their change time), ${result.unrepaired.length} not repaired${result.unrepaired.length ? ':' : ''}`,
          ...result.unrepaired.map((f) => `  ${f.snapshot} ${f.path}: ${f.reason}`),
          ...result.repaired.map((f) => `  repaired ${f.snapshot} ${f.path}${f.how === 'intact' ? ' (its bytes were right)' : ''}`),
          ...result.other.map((p) => `  left as it is: ${p}`),
        ], { damaged: result.damaged, repaired: result.repaired.length, unrepaired: result.unrepaired.length });
        if (result.unrepaired.length || result.other.length) process.exitCode = EXIT.partial;
      } finally {
        await connection.close();
      }
    } finally {
      await preflight.end();
    }
  }),
}, {
  examples: [
    ['wds-files archive repair /srv/backup/attachments --base-url https://api.example.com', 'fresh copies of the files check finds damaged, from the service (key and secret from WDS_CONSUMER_KEY, WDS_CONSUMER_SECRET)'],
  ],
  exits: { 1: 'the archive cannot be changed (a run holds it, say), or the service cannot be reached', 3: 'some files could not be repaired (each one named, with why)', 130: true, 143: true },
  env: CONNECTION_ENV,
});

interface CopyArgs extends ArchiveArgs { destination: string; snapshot?: string[]; 'wait-lock'?: string; 'lock-mode'?: 'governance' | 'compliance'; 'lock-days'?: number }

const copyCommand = leafCommand<CopyArgs>({
  command: 'copy <archive> <destination>',
  describe: 'Copy snapshots into another archive (folder or s3://), sending only content it lacks',
  builder: (y: Argv) => withArchive(y, 'Write the snapshots copied and what was sent, as --json prints them, to FILE')
    .positional('destination', { type: 'string', demandOption: true, describe: 'The archive to copy into: a folder (made if missing), or s3://BUCKET/PREFIX' })
    .option('snapshot', { type: 'string', array: true, describe: 'Only this snapshot (@ID, latest or latest~N); give it again for more. Default: every snapshot' })
    .option('wait-lock', { type: 'string', describe: 'If a run is writing the destination, wait for it up to DURATION (30s, 5m, 1h) instead of refusing' })
    .option('lock-mode', { choices: ['governance', 'compliance'] as const, describe: 'For an s3:// destination: S3 Object Lock on every object written (with --lock-days)' })
    .option('lock-days', { type: 'number', describe: 'For an s3:// destination: days each object written stays locked' })
    .check((args) => {
      const wait = args['wait-lock'];
      if (wait !== undefined && parseDuration(String(wait)) === null) throw new UsageError(`--wait-lock must be a duration such as 30s, 5m or 1h, got "${wait}"`);
      if ((args['lock-mode'] === undefined) !== (args['lock-days'] === undefined)) throw new UsageError('--lock-mode and --lock-days go together');
      const days = args['lock-days'];
      if (days !== undefined && !(Number.isInteger(days) && days >= 1)) throw new UsageError(`--lock-days must be a whole number of days, 1 or more, got ${String(days)}`);
      if (args['lock-mode'] !== undefined && !isBucket(String(args.destination))) throw new UsageError('--lock-mode and --lock-days are for an s3:// destination: a folder has no Object Lock');
      return true;
    }) as unknown as Argv<CopyArgs>,
  handler: (argv) => reported(argv, 'copy', async (report) => {
    const from = await archiveStore(argv);
    const preflight = await preflightOf(argv);
    let to: ArchiveStore | undefined;
    try {
      let lock;
      if (isBucket(argv.destination)) {
        to = await archiveStore(argv, argv.destination);
        lock = await preflight.bucketArchive(to as BucketStore, argv['wait-lock']);
      } else {
        const dir = resolve(argv.destination);
        lock = await preflight.exportTarget(dir, { zip: false, force: false, waitLock: argv['wait-lock'], archive: true });
        const { snapshotsDir } = await store();
        await (await import('node:fs/promises')).mkdir(snapshotsDir(dir), { recursive: true });
        to = await archiveStore(argv, dir);
      }
      const { copyArchive } = await import('../../archive/copy.js');
      const objectLock = argv['lock-mode'] ? { mode: argv['lock-mode'], days: argv['lock-days']! } : undefined;
      const result = await copyArchive(from, to, { snapshots: argv.snapshot?.map(String), lock, objectLock, signal: stopSignal() });
      const requests = { ...(from.kind === 'bucket' ? { source: (from as BucketStore).bucket.requests } : {}), ...(to.kind === 'bucket' ? { destination: (to as BucketStore).bucket.requests } : {}) };
      const value = { from: from.where, to: to.where, ...result, requests };
      Object.assign(report, value);
      print(value, () => [
        `copy ${from.where} -> ${to!.where}: ${result.copied.length} snapshot${result.copied.length === 1 ? '' : 's'} copied, ${result.present.length} there already; ${result.sent.files} files sent (${formatBytes(result.sent.bytes)}), ${result.reused} the destination held`,
        ...(result.latest ? [`  latest of ${to!.where} is ${result.latest}`] : []),
      ], { copied: result.copied.length, present: result.present.length, sent: result.sent.files, reused: result.reused });
    } finally {
      await preflight.end();
      from.close();
      to?.close();
    }
  }),
}, {
  examples: [
    ['wds-files archive copy /srv/backup/attachments s3://hr-archive/acme/attachments', 'every snapshot into a bucket, uploading only content it does not hold'],
    ['wds-files archive copy s3://hr-archive/acme/attachments restored-archive/ --snapshot latest', 'the latest snapshot back into a folder archive'],
  ],
  exits: { 1: 'an archive cannot be read or written (a run holds the destination, say)', 2: 'a bad option, or no such archive or snapshot' },
  env: [],
});

export const archiveCommand: CommandModule = {
  command: 'archive',
  describe: 'Snapshot archives: list, show, diff, restore, check, repair, forget, copy',
  builder: (y: Argv) => y.command(listCommand).command(showCommand).command(diffCommand).command(restoreCommand).command(checkCommand).command(repairCommand).command(forgetCommand).command(copyCommand)
    .demandCommand(1, 'name an archive command: list, show, diff, restore, check, repair, forget or copy'),
  handler: () => undefined,
};
