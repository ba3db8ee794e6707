/** How every file command ends: the report file, the JSON summary or a short text, the exit code. */
import { rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { interruptedLine, type RunReport } from '../stages/report.js';
import { redactValue } from '../util/redact.js';
import { EXIT } from './exit-codes.js';
import { formatBytes } from '../util/format.js';
import { exitCodeOf } from './stop-signal.js';

export { interruptedLine };

export interface OutputArgs {
  json?: boolean;
  report?: string;
  quiet?: boolean;
}

/**
 * Writes the report under a temporary name, then renames it: a disk that fills while it is
 * written leaves the earlier report whole. Answers why it could not be written, or null.
 */
export async function writeReport(path: string, data: Parameters<typeof writeFile>[1]): Promise<string | null> {
  // A device or a pipe (/dev/stdout) is written as it is.
  const special = await stat(path).then((info) => !info.isFile(), () => false);
  const temp = special ? path : join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    await writeFile(temp, data);
    if (!special) await rename(temp, path);
    return null;
  } catch (error) {
    if (!special) await rm(temp, { force: true }).catch(() => undefined);
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOSPC' ? 'no space left on the device' : code ?? (error as Error).message;
  }
}

export async function finishRun(args: OutputArgs, report: RunReport, extra: Record<string, unknown>, lines: string[]): Promise<void> {
  // A report that cannot be written does not hide what the run did: the summary is said first.
  const reportProblem = args.report ? await writeReport(args.report, report.jsonParts(extra, redactValue)) : null;
  try {
    summarize(args, report, lines, extra);
  } finally {
    if (reportProblem) {
      process.stderr.write(`wds-files: --report ${args.report} could not be written (${reportProblem}); what the run did is in the summary above\n`);
      process.exitCode = EXIT.fatal;
    }
  }
}

function summarize(args: OutputArgs, report: RunReport, lines: string[], extra: Record<string, unknown>): void {
  if (args.json) {
    process.stdout.write(`${JSON.stringify(redactValue(report.summary(extra)))}\n`);
  } else {
    const c = report.counts;
    const parts = [`${c.ok} ok`];
    if (c.converted) parts.push(`${c.converted} converted`);
    const unreached = report.interrupted?.unreached ?? 0;
    if (c.skipped) parts.push(unreached ? `${c.skipped} skipped (${unreached} not reached)` : `${c.skipped} skipped`);
    if (c.invalid) parts.push(`${c.invalid} invalid`);
    if (c.conflict) parts.push(`${c.conflict} conflicting`);
    if (c.failed) parts.push(`${c.failed} failed`);
    if (c.unknown) parts.push(`${c.unknown} unknown`);
    console.log(`${report.command}: ${parts.join(', ')}; ${formatBytes(report.bytes)} in ${((report.finishedAt - report.startedAt) / 1000).toFixed(1)} s`);
    for (const line of lines) console.log(`  ${line}`);
    for (const item of report.firstProblems) {
      console.log(`  ${item.outcome}: ${item.path ?? item.file_name} (${item.code}): ${item.reason ?? ''}`);
    }
    if (report.problems > 50) console.log(`  ... and ${report.problems - 50} more (see --report)`);
  }
  if (report.interrupted) {
    const { signal } = report.interrupted;
    const line = interruptedLine(report);
    // With --json, stdout holds the summary alone, and the line goes to stderr.
    if (args.json) process.stderr.write(`${line}\n`);
    else console.log(line);
    process.exitCode = exitCodeOf(signal);
    return;
  }
  if (report.problems > 0) process.exitCode = EXIT.partial;
}
