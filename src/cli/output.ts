/** What every file command ends with: the report file written safely, the summary for a person. */
import { rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { interruptedLine, type RunReport } from '../stages/report.js';
import { formatBytes } from '../util/format.js';

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

/** A file command's summary for a person: the counts, its `lines`, and the first files that did not go through. */
export function summaryLines(report: RunReport, lines: string[]): string[] {
  const c = report.counts;
  const parts = [`${c.ok} ok`];
  if (c.converted) parts.push(`${c.converted} converted`);
  const unreached = report.interrupted?.unreached ?? 0;
  if (c.skipped) parts.push(unreached ? `${c.skipped} skipped (${unreached} not reached)` : `${c.skipped} skipped`);
  if (c.invalid) parts.push(`${c.invalid} invalid`);
  if (c.conflict) parts.push(`${c.conflict} conflicting`);
  if (c.failed) parts.push(`${c.failed} failed`);
  if (c.unknown) parts.push(`${c.unknown} unknown`);
  return [
    `${report.command}: ${parts.join(', ')}; ${formatBytes(report.bytes)} in ${((report.finishedAt - report.startedAt) / 1000).toFixed(1)} s`,
    ...lines.map((line) => `  ${line}`),
    ...report.firstProblems.map((item) => `  ${item.outcome}: ${item.path ?? item.file_name} (${item.code}): ${item.reason ?? ''}`),
    ...(report.problems > 50 ? [`  ... and ${report.problems - 50} more (see --report)`] : []),
  ];
}
