/**
 * Where a text stops being JSON and which rule it breaks, without quoting it. JSON.parse's own
 * message quotes the text around the fault, and a request body typed on the command line may
 * carry a password (`{"password": hunter2}`), so the command says the place and the rule instead.
 */

const VALUE = 'expected a value: a string in double quotes, a number, true, false, null, an object {...} or an array [...]';
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

class Fault extends Error {
  constructor(readonly at: number, readonly rule: string) {
    super(rule);
    this.name = 'Fault';
  }
}

/** A scanner of RFC 8259 JSON that stops at the first fault. */
class Scanner {
  private i = 0;
  constructor(private readonly text: string) {}

  run(): void {
    this.value();
    this.space();
    if (this.i < this.text.length) throw new Fault(this.i, 'unexpected text after the JSON value');
  }

  private space(): void {
    while (this.i < this.text.length && ' \t\n\r'.includes(this.text[this.i]!)) this.i += 1;
  }

  private fail(rule: string): never {
    throw new Fault(this.i, this.i >= this.text.length ? `the text ends early; ${rule}` : rule);
  }

  private value(): void {
    this.space();
    const c = this.text[this.i];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
    for (const word of ['true', 'false', 'null']) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return;
      }
    }
    this.fail(VALUE);
  }

  private object(): void {
    this.i += 1;
    this.space();
    if (this.text[this.i] === '}') {
      this.i += 1;
      return;
    }
    for (;;) {
      this.space();
      if (this.text[this.i] !== '"') this.fail(this.text[this.i] === '}' ? 'a comma is not allowed before }' : 'expected a property name in double quotes');
      this.string();
      this.space();
      if (this.text[this.i] !== ':') this.fail('expected : after the property name');
      this.i += 1;
      this.value();
      this.space();
      if (this.text[this.i] === '}') {
        this.i += 1;
        return;
      }
      if (this.text[this.i] !== ',') this.fail('expected , or } after a property value');
      this.i += 1;
    }
  }

  private array(): void {
    this.i += 1;
    this.space();
    if (this.text[this.i] === ']') {
      this.i += 1;
      return;
    }
    for (;;) {
      this.space();
      if (this.text[this.i] === ']') this.fail('a comma is not allowed before ]');
      this.value();
      this.space();
      if (this.text[this.i] === ']') {
        this.i += 1;
        return;
      }
      if (this.text[this.i] !== ',') this.fail('expected , or ] after an element');
      this.i += 1;
    }
  }

  private string(): void {
    const start = this.i;
    this.i += 1;
    for (;;) {
      if (this.i >= this.text.length) throw new Fault(start, 'a string is not closed: the text ends inside it');
      const c = this.text[this.i]!;
      if (c === '"') {
        this.i += 1;
        return;
      }
      if (c < ' ') this.fail('a control character (a line break or a tab, say) inside a string must be escaped');
      if (c === '\\') {
        const next = this.text[this.i + 1];
        if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(this.text.slice(this.i + 2, this.i + 6))) this.i += 6;
        else if (next !== undefined && ESCAPES.has(next)) this.i += 2;
        else this.fail('an escape in a string must be one of \\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and four hex digits');
      } else this.i += 1;
    }
  }

  private digit(): boolean {
    const c = this.text[this.i];
    return c !== undefined && c >= '0' && c <= '9';
  }

  private digits(): void {
    while (this.digit()) this.i += 1;
  }

  private number(): void {
    if (this.text[this.i] === '-') this.i += 1;
    if (!this.digit()) this.fail('a number needs a digit after -');
    if (this.text[this.i] === '0') {
      this.i += 1;
      if (this.digit()) this.fail('a number does not start with 0 unless it is 0 or 0.something');
    } else this.digits();
    if (this.text[this.i] === '.') {
      this.i += 1;
      if (!this.digit()) this.fail('a number needs a digit after its decimal point');
      this.digits();
    }
    if (this.text[this.i] === 'e' || this.text[this.i] === 'E') {
      this.i += 1;
      if (this.text[this.i] === '+' || this.text[this.i] === '-') this.i += 1;
      if (!this.digit()) this.fail('a number needs a digit in its exponent');
      this.digits();
    }
  }
}

/**
 * The fault of a text that is not JSON, as `line L, column C: rule`; null when it is JSON. Columns
 * count characters from 1, as an editor does.
 */
export function jsonProblem(text: string): string | null {
  if (!text.trim()) return 'the text is empty';
  try {
    new Scanner(text).run();
    return null;
  } catch (error) {
    if (!(error instanceof Fault)) return 'nested too deeply to read';
    const before = text.slice(0, error.at);
    const line = before.split('\n').length;
    const column = error.at - (before.lastIndexOf('\n') + 1) + 1;
    return `line ${line}, column ${column}: ${error.rule}`;
  }
}

/** A parsed value's kind in words, for a message that must not quote the value. */
export function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? 'a string' : typeof value === 'number' ? 'a number' : typeof value === 'boolean' ? `${value}` : 'an object';
}
