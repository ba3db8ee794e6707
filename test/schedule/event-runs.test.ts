/**
 * Pipelines started by member events (src/schedule/event-runs.ts): only the events a pipeline
 * names start it, a burst within the debounce is one run, events during a run queue exactly one
 * more, and a stop lets the run under way end and starts nothing.
 */
import { describe, expect, it } from 'vitest';
import { EventRuns, type EventPipeline } from '../../src/schedule/event-runs.js';
import type { RunOutcome } from '../../src/schedule/types.js';
import type { WebhookEvent } from '../../src/spec/events.js';

/** A pipeline whose runs last until the test lets each one end. */
function gatedPipeline(name: string, events: WebhookEvent[], debounceMs: number) {
  const started: number[] = [];
  const releases: (() => void)[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const pipeline: EventPipeline = {
    events,
    debounceMs,
    runner: {
      name,
      file: `${name}.yaml`,
      run: async () => {
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        started.push(Date.now());
        await new Promise<void>((resolve) => releases.push(resolve));
        running -= 1;
        const now = new Date().toISOString();
        return { status: 'ok', started_at: now, finished_at: now, duration_ms: 0, files: 1, bytes: 1 } satisfies RunOutcome;
      },
    },
  };
  return { pipeline, started, release: () => releases.shift()?.(), get mostAtOnce() { return mostAtOnce; } };
}

const until = async (check: () => boolean): Promise<void> => {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
};
const created = (code: string) => ({ event: 'member_created' as const, codes: [code] });

describe('pipelines started by events', () => {
  it('runs a pipeline once per burst, only for the events it names, and queues exactly one more run for events during a run', async () => {
    const stop = new AbortController();
    const lines: string[] = [];
    const starts: string[] = [];
    const photos = gatedPipeline('photos', ['member_created'], 50);
    const leavers = gatedPipeline('leavers', ['member_deleted'], 50);
    const runs = new EventRuns([photos.pipeline, leavers.pipeline], { signal: stop.signal, log: (line) => lines.push(line), timeZone: 'Asia/Tokyo', onStart: (name) => starts.push(name) });

    runs.notify([created('A1')]);
    runs.notify([created('A2'), { event: 'member_updated', codes: ['A3'] }]);
    await until(() => photos.started.length === 1);
    // Three events during the run: one more run, not three.
    runs.notify([created('B1')]);
    runs.notify([created('B2')]);
    runs.notify([created('B3')]);
    photos.release();
    await until(() => photos.started.length === 2);
    photos.release();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(photos.started).toHaveLength(2);
    expect(photos.mostAtOnce).toBe(1);
    expect(leavers.started).toHaveLength(0);
    expect(starts).toEqual(['photos', 'photos']);
    expect(lines.some((line) => line.includes('one more run follows it'))).toBe(true);

    stop.abort();
    await runs.finished();
  });

  it('on a stop, drops a debounce under way and lets the run under way end', async () => {
    const stop = new AbortController();
    const slow = gatedPipeline('slow', ['member_created'], 10);
    const waiting = gatedPipeline('waiting', ['member_deleted'], 60_000);
    const runs = new EventRuns([slow.pipeline, waiting.pipeline], { signal: stop.signal, log: () => undefined, timeZone: 'Asia/Tokyo' });
    runs.notify([created('C1'), { event: 'member_deleted', codes: ['C2'] }]);
    await until(() => slow.started.length === 1);
    runs.notify([created('C3')]);
    stop.abort();
    let ended = false;
    const finished = runs.finished().then(() => (ended = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ended).toBe(false);
    slow.release();
    await finished;
    expect(slow.started).toHaveLength(1);
    expect(waiting.started).toHaveLength(0);
  });
});
