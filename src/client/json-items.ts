/**
 * Reads a JSON answer as it arrives, handing each element of one array of its top-level object to
 * a callback and keeping only the rest: a listing of 200,000 files is 60 MB of text, and read
 * whole it was held as text and as objects at once, with every file's URL, for the whole run.
 * Only the bytes that structure JSON are looked at (they are ASCII, so a multi-byte character cut
 * between two chunks cannot be taken for one); each element's bytes are parsed with JSON.parse.
 */

/** Splits the top-level object's array under `key` into its elements, as the chunks come. */
export class JsonItemReader {
  /** Bytes of the answer outside the array's elements, with the array left empty. */
  private readonly rest: Buffer[] = [];
  /** Bytes of the element under way, from earlier chunks. */
  private element: Buffer[] = [];
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** The last string closed at depth 1, and whether it was a key (followed by `:`). */
  private lastString = '';
  private stringStart = -1;
  private stringBytes: Buffer[] = [];
  private expectKey = false;
  /** 'before' the array, 'inside' it, 'after' it. */
  private phase: 'before' | 'inside' | 'after' = 'before';
  /** Inside the array: whether an element is under way. */
  private inElement = false;
  count = 0;

  constructor(
    private readonly key: string,
    private readonly onItem: (item: unknown) => void,
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    let elementFrom = this.inElement ? 0 : -1;
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === 0x5c) this.escaped = true;
        else if (byte === 0x22) {
          this.inString = false;
          if (this.depth === 1 && this.phase === 'before') {
            this.stringBytes.push(chunk.subarray(this.stringStart, i));
            this.lastString = Buffer.concat(this.stringBytes).toString('utf8');
            this.stringBytes = [];
          }
        }
        continue;
      }
      switch (byte) {
        case 0x22:
          this.inString = true;
          if (this.depth === 1 && this.phase === 'before') {
            this.stringStart = i + 1;
            this.stringBytes = [];
          }
          if (this.phase === 'inside' && this.depth === 2 && !this.inElement) {
            this.inElement = true;
            elementFrom = i;
          }
          break;
        case 0x3a: // ':' after a key of the top-level object
          if (this.depth === 1) this.expectKey = true;
          break;
        case 0x7b: // '{'
        case 0x5b: // '['
          if (this.phase === 'inside' && this.depth === 2 && !this.inElement) {
            this.inElement = true;
            elementFrom = i;
          }
          this.depth += 1;
          if (byte === 0x5b && this.depth === 2 && this.phase === 'before' && this.expectKey && this.lastString === this.key) {
            // The array starts: what came before it (with the `[`) is the rest's.
            this.rest.push(chunk.subarray(from, i + 1));
            from = i + 1;
            this.phase = 'inside';
          }
          break;
        case 0x7d: // '}'
        case 0x5d: // ']'
          if (this.phase === 'inside' && this.depth === 2 && byte === 0x5d) {
            // The array ends: a scalar element under way ends with it.
            if (this.inElement) elementFrom = this.endElement(chunk, elementFrom, i);
            this.phase = 'after';
            from = i;
          }
          this.depth -= 1;
          if (this.phase === 'inside' && this.depth === 2 && this.inElement) elementFrom = this.endElement(chunk, elementFrom, i + 1);
          if (this.depth === 1) this.expectKey = false;
          break;
        case 0x2c: // ','
          if (this.phase === 'inside' && this.depth === 2 && this.inElement) elementFrom = this.endElement(chunk, elementFrom, i);
          if (this.depth === 1) this.expectKey = false;
          break;
        default:
          if (this.phase === 'inside' && this.depth === 2 && !this.inElement && byte > 0x20) {
            this.inElement = true;
            elementFrom = i;
          }
      }
    }
    if (this.inString && this.depth === 1 && this.phase === 'before') this.stringBytes.push(chunk.subarray(Math.max(this.stringStart, 0), chunk.length));
    this.stringStart = 0;
    if (this.phase !== 'inside') this.rest.push(chunk.subarray(from));
    if (this.inElement && elementFrom >= 0) this.element.push(Buffer.from(chunk.subarray(elementFrom)));
  }

  /** Parses the element ending before `end` and hands it over; answers -1 (no element under way). */
  private endElement(chunk: Buffer, from: number, end: number): number {
    this.element.push(chunk.subarray(from, end));
    const text = (this.element.length === 1 ? this.element[0]! : Buffer.concat(this.element)).toString('utf8');
    this.element = [];
    this.inElement = false;
    this.count += 1;
    this.onItem(JSON.parse(text));
    return -1;
  }

  /** The answer without the array's elements (the array empty), once every chunk was pushed. */
  end(): unknown {
    if (this.phase === 'inside' || this.inString || this.depth !== 0) throw new SyntaxError('the answer ended inside its JSON');
    return JSON.parse(Buffer.concat(this.rest).toString('utf8'));
  }
}
