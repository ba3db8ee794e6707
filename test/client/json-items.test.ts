/**
 * The listing's answer read element by element (src/client/json-items.ts): whatever the chunks it
 * arrives in, each element of the array comes out as JSON.parse would give it, in order, and the
 * rest of the answer keeps every other key with the array left empty.
 */
import { describe, expect, it } from 'vitest';
import { JsonItemReader } from '../../src/client/json-items.js';

/** Pushes `text` in chunks cut at the given byte positions; answers the items and the rest. */
function read(text: string, key: string, cuts: number[]): { items: unknown[]; rest: unknown } {
  const items: unknown[] = [];
  const reader = new JsonItemReader(key, (item) => items.push(item));
  const bytes = Buffer.from(text);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    reader.push(Buffer.from(bytes.subarray(at, cut)));
    at = cut;
  }
  return { items, rest: reader.end() };
}

const ANSWER = {
  before: { member_data: ['not this one'], n: [1, 2] },
  member_data: [
    { code: 'A"1\\', file_name: '写真 [1], {x}.jpg', download_url: 'https://s/x?a=1&b="2"', updated_at: '2026-01-01 10:00:00', nested: [[1], { k: '}' }] },
    { code: 'B2', records: [{ file_name: 'é,]', download_url: 'u', updated_at: 't' }] },
    'a string', 12.5, null, true, [],
  ],
  after: 'member_data',
};

describe('JsonItemReader', () => {
  it('hands over every element of the array, whatever the chunks, and keeps the rest', () => {
    const text = JSON.stringify(ANSWER, null, 1);
    const expected = { items: ANSWER.member_data, rest: { ...ANSWER, member_data: [] } };
    expect(read(text, 'member_data', [])).toEqual(expected);
    // Every single cut, and every byte a chunk of its own (a multi-byte character split too).
    for (let cut = 1; cut < Buffer.byteLength(text); cut += 1) expect(read(text, 'member_data', [cut])).toEqual(expected);
    expect(read(text, 'member_data', Array.from({ length: Buffer.byteLength(text) }, (_, i) => i + 1))).toEqual(expected);
  });

  it('reads an empty array, an answer without the key, and refuses an answer cut short', () => {
    expect(read('{"member_data":[]}', 'member_data', [3])).toEqual({ items: [], rest: { member_data: [] } });
    expect(read('{"other":[1]}', 'member_data', [])).toEqual({ items: [], rest: { other: [1] } });
    expect(() => read('{"member_data":[{"code":"A"},', 'member_data', [])).toThrow(SyntaxError);
  });
});
