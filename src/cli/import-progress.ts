/**
 * Progress of an import on stderr. On a terminal, one line redrawn four times a second: the stage,
 * files, bytes, update requests sent against the fewest needed, a wait as a live countdown, and
 * an ETA that the update window makes predictable (requests left at its pace, plus the wait).
 * Otherwise a plain line every few seconds and one per wait, for logs.
 */
import type { WaitEvent } from '../client/limiter.js';
import type { WindowOption } from '../client/options.js';
import type { ImportProgress } from '../pipelines/import-progress.js';
import { formatBytes } from '../util/format.js';
import { paint } from './color.js';
import { say } from './log.js';
import { drawLive, endLive, fitLive } from './live-line.js';

export interface ImportProgressView {
  update(progress: ImportProgress): void;
  wait(event: WaitEvent): void;
  stop(): void;
  /** Whether waits are shown by the view (a terminal) rather than as lines by the caller. */
  readonly showsWaits: boolean;
}

const STAGE = { check: 'checking', send: 'sending' } as const;

export function duration(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** "the 5-a-minute window", "the 2-in-7 s window". */
function windowName(window: WindowOption): string {
  if (window.windowMs === 60_000) return `the ${window.limit}-a-minute window`;
  if (window.windowMs === 3_600_000) return `the ${window.limit.toLocaleString('en')}-an-hour window`;
  return `the ${window.limit}-in-${duration(window.windowMs)} window`;
}

function waitWords(event: WaitEvent, leftMs: number, update: WindowOption | undefined): string {
  const left = duration(leftMs);
  switch (event.reason) {
    case 'update-limit':
      return update ? `waiting ${left} for ${windowName(update)}` : `waiting ${left} for the update limit`;
    case 'request-limit':
      return `waiting ${left} for the hourly request limit`;
    case 'token-limit':
      return `waiting ${left} for the hourly token limit`;
    case 'rate-limited':
      return `waiting ${left}: the service asked to slow down`;
    case 'maintenance':
      return `waiting ${left} for the service's maintenance to end`;
    default:
      return `retrying in ${left}`;
  }
}

/**
 * The ETA of the sending: requests left at the update window's pace (5 a minute by default), plus
 * the wait under way.
 * Unknown (undefined) while checking, or when the client keeps no update window.
 */
export function sendingEta(progress: ImportProgress, update: WindowOption | undefined, waitLeftMs: number, updateWaiting: boolean): number | undefined {
  if (progress.stage !== 'send' || progress.minimum === undefined || !update) return undefined;
  // An update request waiting goes out when its wait ends; the ones after it go at the window's pace.
  const left = Math.max(0, progress.minimum - (progress.requests ?? 0) - (updateWaiting && waitLeftMs > 0 ? 1 : 0));
  return waitLeftMs + (left / update.limit) * update.windowMs;
}

/** `update` gives the client's update window once it is known (after connecting). */
export function createImportProgress(label: string, options: { quiet?: boolean; json?: boolean; update: () => WindowOption | undefined }): ImportProgressView {
  if (options.quiet) return { update: () => undefined, wait: () => undefined, stop: () => undefined, showsWaits: false };
  let latest: ImportProgress | undefined;
  let waitUntil = 0;
  let lastWait: WaitEvent | undefined;
  const waitLeft = (): number => Math.max(0, waitUntil - Date.now());

  const parts = (): string[] => {
    if (!latest) return [];
    const p = latest;
    const out = [`${p.done}${p.total === undefined ? '' : `/${p.total}`} files`];
    if (p.stage === 'send') {
      out.push(`${formatBytes(p.bytes ?? 0)}${p.totalBytes ? ` of ${formatBytes(p.totalBytes)}` : ''}`);
      out.push(`${p.requests ?? 0} of at least ${p.minimum ?? '?'} requests`);
    }
    if (lastWait && waitLeft() > 0) out.push(waitWords(lastWait, waitLeft(), options.update()));
    const updateWaiting = lastWait?.reason === 'update-limit' || lastWait?.reason === 'rate-limited';
    const eta = sendingEta(p, options.update(), waitLeft(), updateWaiting);
    if (eta !== undefined) out.push(`ETA ${duration(eta)}`);
    return out;
  };

  if (process.stderr.isTTY && !options.json) {
    const bar = (): string => {
      const p = latest!;
      if (p.total === undefined || p.total === 0) return '';
      const cells = 20;
      const full = Math.min(cells, Math.round((p.done / p.total) * cells));
      return ` [${paint('green', '█'.repeat(full))}${'░'.repeat(cells - full)}]`;
    };
    let stopped = false;
    const draw = (): void => {
      if (!latest || stopped) return;
      const stage = paint('cyan', STAGE[latest.stage]);
      // Cut to the terminal's width so that it never wraps.
      drawLive(fitLive(`${label} ${stage}${bar()} ${parts().join(' | ')}`));
    };
    const timer = setInterval(draw, 250);
    timer.unref();
    return {
      showsWaits: true,
      update: (progress) => {
        latest = progress;
        draw();
      },
      wait: (event) => {
        lastWait = event;
        waitUntil = Date.now() + event.waitMs;
        draw();
      },
      stop: () => {
        if (stopped) return;
        clearInterval(timer);
        draw();
        stopped = true;
        endLive();
      },
    };
  }

  let last = 0;
  const print = (): void => {
    if (latest) say(`${label}: ${STAGE[latest.stage]} ${parts().join(', ')}`);
  };
  return {
    showsWaits: false,
    update: (progress) => {
      const stageChanged = latest?.stage !== progress.stage;
      latest = progress;
      const finished = progress.total !== undefined && progress.done === progress.total;
      if (stageChanged || finished || Date.now() - last >= 5000) {
        last = Date.now();
        print();
      }
    },
    wait: (event) => {
      lastWait = event;
      waitUntil = Date.now() + event.waitMs;
    },
    stop: () => undefined,
  };
}
