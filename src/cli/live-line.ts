/**
 * The one line a progress view redraws at the foot of a terminal, and every other stderr line
 * written above it. A line said while the view is shown (a wait, a warning, the Ctrl-C notice)
 * takes the view's place, and the view is drawn again below it, so the two never share a line;
 * once the view has ended, nothing redraws it over what follows (the summary). The cursor is never
 * hidden, so a process that exits at once (a second Ctrl-C) leaves the terminal as it found it.
 */

const CLEAR_LINE = '\r\u001b[2K';

let shown: string | null = null;

/** Draws the live line in place of the one shown (cut to the terminal's width by the caller). */
export function drawLive(line: string): void {
  process.stderr.write(`${CLEAR_LINE}${line}`);
  shown = line;
}

/** Ends the live line: its last drawing stays, and the cursor goes to the next line. */
export function endLive(): void {
  if (shown === null) return;
  shown = null;
  process.stderr.write('\n');
}

/** Takes the live line off the terminal, for a process about to exit without ending its view. */
export function clearLive(): void {
  if (shown === null) return;
  shown = null;
  process.stderr.write(CLEAR_LINE);
}

/** Whether a live line is on the terminal now. */
export const liveShown = (): boolean => shown !== null;

/** Writes whole lines to stderr, above the live line when one is shown. */
export function writeAbove(lines: string): void {
  if (shown === null) {
    process.stderr.write(lines);
    return;
  }
  process.stderr.write(`${CLEAR_LINE}${lines}${shown}`);
}

/** The terminal's width for a live line: one column short, so that it never wraps. */
export const liveWidth = (): number => Math.max(40, (process.stderr.columns ?? 100) - 1);

/** The line cut to `liveWidth()` columns, counted without colour codes. */
export function fitLive(line: string): string {
  // eslint-disable-next-line no-control-regex -- the colour codes the views write
  const visible = line.replace(/\u001b\[[0-9;]*m/g, '');
  return visible.length > liveWidth() ? visible.slice(0, liveWidth()) : line;
}
