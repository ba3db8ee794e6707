/**
 * A decoder's error becomes one line of a report: libvips hands back its whole error log, and a
 * damaged PNG can bring a dozen of its reader's seek retries before the reason (seen in CI, where
 * how much of the file libpng had read varied between runs).
 */
import { expect, it } from 'vitest';
import { decoderMessage } from '../../src/stages/import/check/photo-check.js';

it('drops libvips seek retries and joins the other lines of its log', () => {
  const log = ['source: bad seek to 1024', 'source: bad seek to 512', 'source: bad seek to 289', 'vipspng: libpng read error', ''].join('\n');
  expect(decoderMessage(new Error(log))).toBe('vipspng: libpng read error');
  expect(decoderMessage(new Error('VipsJpeg: Premature end of input file\nVipsJpeg: Premature end of input file\nread error'))).toBe('VipsJpeg: Premature end of input file; read error');
  expect(decoderMessage(new Error(''))).toBe('no reason given');
});
