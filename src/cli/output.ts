/** How every file command ends: the report file, the JSON summary or a short text, the exit code. */
import { writeFile } from 'node:fs/promises';
import type { RunReport } from '../stages/report.js';
import { redactValue } from '../util/redact.js';
import { EXIT } from './exit-codes.js';
import { formatBytes } from '../util/format.js';
import { exitCodeOf } from './stop-signal.js';

export interface OutputArgs {
  json?: boolean;
  report?: string;
  quiet?: boolean;
}

export async function finishRun(args: OutputArgs, report: RunReport, extra: Record<string, unknown>, lines: string[]): Promise<void> {
  if (args.report) await writeFile(args.report, report.jsonParts(extra, redactValue));
  if (args.json) {
    process.stdout.write(`${JSON.stringify(redactValue(report.summary(extra)))}\n`);
  } else {
    const c = report.counts;
    const parts = [`${c.ok} ok`];
    if (c.converted) parts.push(`${c.converted} converted`);
    if (c.skipped) parts.push(`${c.skipped} skipped`);
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
    const { signal, total } = report.interrupted;
    const done = report.itemCount;
    const line = `interrupted: ${done} of ${total ?? '?'} done; run it again to continue (stopped by ${signal})`;
    // With --json, stdout holds the summary alone, and the line goes to stderr.
    if (args.json) process.stderr.write(`${line}\n`);
    else console.log(line);
    process.exitCode = exitCodeOf(signal);
    return;
  }
  if (report.problems > 0) process.exitCode = EXIT.partial;
}
