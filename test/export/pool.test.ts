/**
 * `pool` (stages/export/download.ts) hands each download one of `concurrency` connection slots (its lane
 * of ConnectionLanes): a lane is held by one download at a time, from its start until it releases
 * it, so no connection ever carries two requests; at most `concurrency` hold one, at most twice as
 * many are under way, and every item runs once.
 */
import { describe, expect, it } from 'vitest';
import { JobFeed, pool } from '../../src/stages/export/download.js';

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('pool lanes', () => {
  it.each([1, 3, 8])('concurrency %d: every lane held by one download at a time', async (concurrency) => {
    const items = Array.from({ length: 120 }, (_, i) => i);
    const holders = new Map<number, number>();
    let underWay = 0;
    let mostUnderWay = 0;
    let mostHolding = 0;
    const seen: number[] = [];
    // A fixed sequence of delays, so that a failure can be run again as it was.
    let seed = 7;
    const random = (): number => ((seed = (seed * 48271) % 2147483647) / 2147483647);
    await pool(items, concurrency, async (item, release, lane) => {
      expect(lane).toBeGreaterThanOrEqual(0);
      expect(lane).toBeLessThan(concurrency);
      expect(holders.get(lane)).toBeUndefined();
      holders.set(lane, item);
      mostHolding = Math.max(mostHolding, holders.size);
      underWay += 1;
      mostUnderWay = Math.max(mostUnderWay, underWay);
      await pause(random() * 3);
      // The lane goes back at the body's end; the file then lands, holding no connection.
      expect(holders.get(lane)).toBe(item);
      holders.delete(lane);
      release();
      release(); // twice changes nothing
      await pause(random() * 3);
      underWay -= 1;
      return item;
    }, (result) => void seen.push(result));
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 120 }, (_, i) => i));
    expect(mostHolding).toBe(concurrency);
    expect(mostUnderWay).toBeLessThanOrEqual(2 * concurrency);
    expect(mostUnderWay).toBeGreaterThan(concurrency);
  });

  it('a fatal error stops the starts; what is under way finishes on its own lanes, then the error comes', async () => {
    const items = Array.from({ length: 50 }, (_, i) => i);
    const holders = new Set<number>();
    const started: number[] = [];
    const run = pool(items, 4, async (item, release, lane) => {
      expect(holders.has(lane)).toBe(false);
      holders.add(lane);
      started.push(item);
      await pause(1 + (item % 3));
      holders.delete(lane);
      if (item === 5) throw new Error('disk full');
      release();
      return item;
    }, () => undefined);
    await expect(run).rejects.toThrow('disk full');
    expect(holders.size).toBe(0);
    expect(started.length).toBeLessThan(50);
  });
});

describe('JobFeed', () => {
  it('calls onFirst at its first item only: an unchanged archive run gives plans of no job, and is not tuned for downloads', async () => {
    let firsts = 0;
    const feed = new JobFeed<number>(() => (firsts += 1));
    feed.push([]);
    feed.pushFrom([]);
    feed.pushFrom((function* () {})());
    const ran: number[] = [];
    const running = pool(feed, 2, async (item, release) => {
      release();
      ran.push(item);
    }, async () => undefined);
    await pause(10);
    expect(firsts).toBe(0);
    feed.pushFrom([1, 2]);
    feed.push([3]);
    feed.end();
    await running;
    expect(firsts).toBe(1);
    expect(ran.sort()).toEqual([1, 2, 3]);
  });

  it('an iterable given to the feed that throws while it is read ends the run with its error, after what was under way', async () => {
    const feed = new JobFeed<number>();
    feed.pushFrom((function* () {
      // More than the feed takes at a time, so that the error comes at a later part.
      for (let i = 0; i < 300; i += 1) yield i;
      throw new Error('the listing could not be read back');
    })());
    feed.end();
    const ran: number[] = [];
    const running = pool(feed, 2, async (item, release) => {
      release();
      ran.push(item);
    }, async () => undefined);
    await expect(running).rejects.toThrow('the listing could not be read back');
    expect(ran.length).toBeGreaterThan(0);
    expect(ran.length).toBeLessThan(300);
  });
});
