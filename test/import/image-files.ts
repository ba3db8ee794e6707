/** Real images as other tools make them, built here from sharp's output: an animated PNG (APNG). */
import { crc32 } from 'node:zlib';

/** One PNG chunk: length, type, data, CRC of type and data. */
function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * The PNG as a one-frame APNG: acTL (1 frame, looping) and an fcTL for the whole picture before
 * the first IDAT, which makes the default image the first frame (APNG specification). Decoders
 * that know no APNG skip both chunks and show the same picture.
 */
export function apng(png: Buffer): Buffer {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const afterHeader = 8 + 25;
  const animation = Buffer.alloc(8);
  animation.writeUInt32BE(1, 0);
  const frame = Buffer.alloc(26);
  frame.writeUInt32BE(0, 0); // sequence number
  frame.writeUInt32BE(width, 4);
  frame.writeUInt32BE(height, 8);
  frame.writeUInt16BE(1, 20); // delay 1/10 s
  frame.writeUInt16BE(10, 22);
  return Buffer.concat([png.subarray(0, afterHeader), pngChunk('acTL', animation), pngChunk('fcTL', frame), png.subarray(afterHeader)]);
}
