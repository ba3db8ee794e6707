/**
 * LatencyWindow (src/util/pacing.ts): an export opens more than its first connections only
 * while the storage answers slowly, and goes back to them at a large file or when answers come
 * quickly; `allOf` opens only when every gate does.
 */
import { describe, expect, it } from 'vitest';
import { LatencyWindow, SLOW_ANSWER_MS, allOf, type StartGate } from '../../src/util/pacing.js';

/** The most connections the window lets be open. */
const size = (gate: StartGate): number => {
  let n = 0;
  while (gate.open(n)) n += 1;
  return n;
};

describe('LatencyWindow', () => {
  it('stays at its start while the storage answers quickly', () => {
    const window = new LatencyWindow(16, 64);
    for (let i = 0; i < 500; i++) window.small(SLOW_ANSWER_MS / 3);
    expect(size(window)).toBe(16);
  });

  it('opens one more per slow answer up to the concurrency, and tells whoever waits', () => {
    const window = new LatencyWindow(16, 64);
    let told = 0;
    window.onOpen(() => (told += 1));
    for (let i = 0; i < 30; i++) window.small(SLOW_ANSWER_MS + 10);
    expect(size(window)).toBe(46);
    expect(told).toBe(30);
    for (let i = 0; i < 100; i++) window.small(SLOW_ANSWER_MS * 4);
    expect(size(window)).toBe(64);
    // Quick answers take it back one at a time, not below the start.
    for (let i = 0; i < 10; i++) window.small(0.5);
    expect(size(window)).toBe(54);
    for (let i = 0; i < 100; i++) window.small(0.5);
    expect(size(window)).toBe(16);
  });

  it('goes back to its start at a large file', () => {
    const window = new LatencyWindow(16, 64);
    for (let i = 0; i < 100; i++) window.small(50);
    window.large();
    expect(size(window)).toBe(16);
  });

  it('never opens more than a concurrency below its start', () => {
    const window = new LatencyWindow(16, 4);
    expect(size(window)).toBe(4);
    for (let i = 0; i < 10; i++) window.small(50);
    window.large();
    expect(size(window)).toBe(4);
  });

  it('allOf: open when every gate is, and every listener registered with each', () => {
    const wide = new LatencyWindow(8, 8);
    const narrow = new LatencyWindow(3, 10);
    const gate = allOf(wide, narrow);
    expect(size(gate)).toBe(3);
    let told = 0;
    gate.onOpen(() => (told += 1));
    narrow.small(50);
    expect(told).toBe(1);
    expect(size(gate)).toBe(4);
  });
});
