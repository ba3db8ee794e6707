/**
 * A download URL's deadline (issue 4): its `Expires=` (epoch seconds of the service's clock, placed
 * on ours through the answer's Date), else the listing time plus 15 minutes; minus a safety margin
 * of 5 % of the lifetime, at least 2 s and at most 60 s. Only the query's own `Expires` counts.
 */
import { describe, expect, it } from 'vitest';
import { deadlineOf } from '../../src/stages/export/list-urls.js';

const listedAt = Date.UTC(2026, 3, 1, 10, 0, 0);
const base = 'https://files.example/storage/acme/b1/report.pdf';

describe('download URL deadlines', () => {
  it('Expires in the query, wherever it stands, on our clock, less 5 %', () => {
    const expires = listedAt / 1000 + 900;
    const want = listedAt + 900_000 - 45_000;
    expect(deadlineOf(`${base}?Expires=${expires}&Signature=abc`, listedAt, listedAt)).toBe(want);
    expect(deadlineOf(`${base}?Signature=abc&Expires=${expires}`, listedAt, listedAt)).toBe(want);
    expect(deadlineOf(`${base}?Signature=abc&Expires=${expires}#part`, listedAt, listedAt)).toBe(want);
    // The service's clock 30 s ahead of ours: the URL expires 30 s earlier on our clock, and the
    // margin is 5 % of the 870 s left.
    expect(deadlineOf(`${base}?Expires=${expires}`, listedAt, listedAt + 30_000)).toBe(listedAt + 870_000 - 43_500);
  });

  it('the margin is at least 2 s and at most 60 s', () => {
    expect(deadlineOf(`${base}?Expires=${listedAt / 1000 + 10}`, listedAt, listedAt)).toBe(listedAt + 8_000);
    expect(deadlineOf(`${base}?Expires=${listedAt / 1000 + 7200}`, listedAt, listedAt)).toBe(listedAt + 7_140_000);
  });

  it('without an Expires of its own, 15 minutes from the listing', () => {
    const fallback = listedAt + 900_000 - 45_000;
    expect(deadlineOf(base, listedAt, undefined)).toBe(fallback);
    expect(deadlineOf(`${base}?XExpires=1&Expires_at=2`, listedAt, listedAt)).toBe(fallback);
    expect(deadlineOf(`https://files.example/a&Expires=1/report.pdf?Signature=abc`, listedAt, listedAt)).toBe(fallback);
    expect(deadlineOf(`${base}?Signature=abc#&Expires=1`, listedAt, listedAt)).toBe(fallback);
  });
});
