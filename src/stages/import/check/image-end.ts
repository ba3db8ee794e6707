/**
 * Whether a JPEG, PNG or GIF reaches its end marker, read the way decoders read it: libjpeg stops
 * at EOI, libpng and spng at IEND, giflib and libnsgif at the trailer, and browsers likewise, so
 * bytes after the marker (a motion photo's MP4, a newline some tool added) are no part of the
 * image and are not looked at. A file cut short never reaches the marker.
 */

/**
 * JPEG: segments are skipped by their lengths (an EXIF thumbnail's own EOI inside APP1 does not
 * count), and scan data up to the next marker, as libjpeg's next_marker does: FF 00 is a stuffed
 * data byte, FF D0 to D7 a restart marker, and FF fill bytes may precede any marker.
 */
function jpegEnds(data: Buffer): boolean {
  let at = 2;
  for (;;) {
    const ff = data.indexOf(0xff, at);
    if (ff < 0) return false;
    at = ff;
    while (data[at] === 0xff) at += 1;
    if (at >= data.length) return false;
    const marker = data[at]!;
    at += 1;
    if (marker === 0xd9) return true;
    // Markers without a length: stuffed data, restarts, TEM, SOI.
    if (marker === 0x00 || (marker >= 0xd0 && marker <= 0xd8) || marker === 0x01) continue;
    if (at + 2 > data.length) return false;
    at += Math.max(2, data.readUInt16BE(at));
    if (at > data.length) return false;
  }
}

/** PNG: chunk by chunk (length, type, data, CRC) from the signature to IEND. */
function pngEnds(data: Buffer): boolean {
  for (let at = 8; at + 8 <= data.length;) {
    if (data.toString('latin1', at + 4, at + 8) === 'IEND') return true;
    at += 12 + data.readUInt32BE(at);
  }
  return false;
}

/** The offset after a run of GIF data sub-blocks (each a length byte, 0 ending the run); past the end when cut short. */
function afterSubBlocks(data: Buffer, start: number): number {
  let at = start;
  while (at < data.length) {
    const size = data[at]!;
    at += 1;
    if (size === 0) return at;
    at += size;
  }
  return data.length + 1;
}

/** Bytes of a GIF colour table whose presence and size a packed field gives. */
const colourTable = (packed: number): number => (packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0);

/** GIF: header and screen descriptor, then extensions and images block by block to the trailer (3B). */
function gifEnds(data: Buffer): boolean {
  if (data.length < 13) return false;
  let at = 13 + colourTable(data[10]!);
  while (at < data.length) {
    const block = data[at]!;
    if (block === 0x3b) return true;
    if (block === 0x21) {
      at = afterSubBlocks(data, at + 2);
    } else if (block === 0x2c) {
      if (at + 10 > data.length) return false;
      // Descriptor (10 bytes), local colour table, LZW minimum code size, then the image data.
      at = afterSubBlocks(data, at + 10 + colourTable(data[at + 9]!) + 1);
    } else {
      return false;
    }
  }
  return false;
}

/** Whether the image of this type (`jpg`, `png`, `gif`) is whole; other types are not judged here. */
export function looksComplete(type: string, data: Buffer): boolean {
  if (type === 'jpg') return jpegEnds(data);
  if (type === 'png') return pngEnds(data);
  if (type === 'gif') return gifEnds(data);
  return true;
}
