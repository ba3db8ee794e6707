/** heic-decode 2 ships no types: the one call wds-files makes. */
declare module 'heic-decode' {
  interface DecodeOptions {
    buffer: Buffer | ArrayBuffer | Uint8Array;
  }
  /** The first image of the file as RGBA, 4 bytes a pixel, rows top to bottom. */
  interface DecodedImage {
    width: number;
    height: number;
    data: Uint8ClampedArray;
  }
  export default function decode(options: DecodeOptions): Promise<DecodedImage>;
}
