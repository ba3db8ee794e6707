/**
 * PathAllocator keeps the paths in use as hashes (PathHashes), not strings: it must still number
 * every path a file system that ignores case would take twice, and no path that is free.
 */
import { describe, expect, it } from 'vitest';
import { PathAllocator, PathHashes } from '../../src/util/safe-name.js';

describe('PathAllocator', () => {
  it('numbers a name taken in any case, and one reserved from disk', () => {
    const paths = new PathAllocator();
    paths.reserve('attachments/1/2/A1/Contract.pdf');
    expect(paths.allocate('attachments/1/2/A1', 'contract.PDF')).toBe('attachments/1/2/A1/contract (2).PDF');
    expect(paths.allocate('attachments/1/2/A1', 'CONTRACT.pdf')).toBe('attachments/1/2/A1/CONTRACT (3).pdf');
    expect(paths.allocate('attachments/1/2/A2', 'contract.pdf')).toBe('attachments/1/2/A2/contract.pdf');
    expect(paths.allocate('photos', 'a/b.jpg')).toBe('photos/a_b.jpg');
    expect(paths.allocate('photos', 'a_b.jpg')).toBe('photos/a_b (2).jpg');
  });

  it('gives 200,000 distinct paths as they are, and each of them again numbered', () => {
    const paths = new PathAllocator();
    const n = 200_000;
    const numbered: string[] = [];
    for (let i = 0; i < n; i += 1) {
      const path = paths.allocate(`attachments/1/2/G${i}`, `file-${i % 7}.pdf`);
      if (path !== `attachments/1/2/G${i}/file-${i % 7}.pdf`) numbered.push(path);
    }
    expect(numbered).toEqual([]);
    for (let i = 0; i < n; i += 1000) expect(paths.allocate(`attachments/1/2/G${i}`, `FILE-${i % 7}.pdf`)).toBe(`attachments/1/2/G${i}/FILE-${i % 7} (2).pdf`);
  });
});

describe('PathHashes', () => {
  it('answers whether a text was added, across its growth', () => {
    const set = new PathHashes();
    for (let i = 0; i < 10_000; i += 1) expect(set.add(`photos/g${i}.jpg`)).toBe(true);
    for (let i = 0; i < 10_000; i += 1) expect(set.add(`photos/g${i}.jpg`)).toBe(false);
    expect(set.add('')).toBe(true);
    expect(set.add('')).toBe(false);
  });
});
