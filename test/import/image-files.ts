/**
 * Real images as other tools make them, built here from sharp's output: an animated PNG (APNG),
 * a motion photo (a JPEG with a video after its EOI, as Google and Samsung cameras write), and a
 * JPEG with an EXIF thumbnail (a second, whole JPEG inside its APP1 segment).
 */
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

/** An MP4 box: 32-bit size, type, payload. */
function box(type: string, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + payload.length);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, payload]);
}

/**
 * The JPEG as a motion photo: the start of an MP4 (ftyp, then an mdat of `videoBytes`) after its
 * EOI. No JPEG decoder reads past EOI, so only the bytes after it matter here; they hold no FF, so
 * no end marker of the JPEG can be found among them.
 */
export function motionPhoto(jpeg: Buffer, videoBytes: number): Buffer {
  const ftyp = box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2avc1mp41', 'latin1'));
  const media = Buffer.alloc(videoBytes - ftyp.length - 8);
  for (let i = 0; i < media.length; i += 1) media[i] = (i * 7) & 0x7f;
  return Buffer.concat([jpeg, ftyp, box('mdat', media)]);
}

/**
 * The JPEG with `thumbnail` as its EXIF thumbnail, right after SOI: an APP1 "Exif" segment whose
 * TIFF block has an empty IFD0 and an IFD1 pointing at the thumbnail (JPEGInterchangeFormat and
 * its length), as cameras write it. The thumbnail brings its own FF D9 into the file's first bytes.
 */
export function withExifThumbnail(jpeg: Buffer, thumbnail: Buffer): Buffer {
  const ifd1 = 14;
  const at = ifd1 + 2 + 2 * 12 + 4;
  const tiff = Buffer.alloc(at);
  tiff.write('II*\0', 0, 'latin1');
  tiff.writeUInt32LE(8, 4); // IFD0: no entries, then IFD1
  tiff.writeUInt16LE(0, 8);
  tiff.writeUInt32LE(ifd1, 10);
  tiff.writeUInt16LE(2, ifd1);
  const entry = (i: number, tag: number, value: number): void => {
    const o = ifd1 + 2 + i * 12;
    tiff.writeUInt16LE(tag, o);
    tiff.writeUInt16LE(4, o + 2); // LONG
    tiff.writeUInt32LE(1, o + 4);
    tiff.writeUInt32LE(value, o + 8);
  };
  entry(0, 0x0201, at);
  entry(1, 0x0202, thumbnail.length);
  const payload = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff, thumbnail]);
  const head = Buffer.from([0xff, 0xe1, 0, 0]);
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), head, payload, jpeg.subarray(2)]);
}
