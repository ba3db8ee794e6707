/**
 * The bucket archive run's table of the objects it knows (src/archive/bucket/sha-sizes.ts): every
 * sha256 set is found with its size, through the table's growth, a later size replaces an
 * earlier one, and a sha256 never set, or one differing in its last byte, is not found.
 */
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { ShaSizes } from '../../../src/archive/bucket/sha-sizes.js';

const sha = (n: number): string => createHash('sha256').update(String(n)).digest('hex');

it('finds each of 5,000 objects with its size, and none it was not given', () => {
  const table = new ShaSizes();
  for (let n = 0; n < 5000; n += 1) table.set(sha(n), n * 3);
  table.set(sha(7), 1234);
  expect(table.size).toBe(5000);
  for (let n = 0; n < 5000; n += 1) expect(table.get(sha(n))).toBe(n === 7 ? 1234 : n * 3);
  for (let n = 5000; n < 6000; n += 1) expect(table.get(sha(n))).toBeUndefined();
  const near = sha(1).slice(0, 62) + (sha(1).endsWith('00') ? '01' : '00');
  expect(table.get(near)).toBeUndefined();
  expect(() => table.set('not-a-sha', 1)).toThrow('not a sha256');
});
