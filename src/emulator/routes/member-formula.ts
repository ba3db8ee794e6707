/**
 * Formula parts (api-v2.md 2, custom field parts: "recalculated automatically after each
 * registration or update"). The emulator computes them when they are read, from the other values
 * of the same member, which gives the same answer as recalculating after every write.
 *
 * A formula (model.ts `FieldDef.formula`) is arithmetic over numbers and `{field id}` references:
 * `+ - * /`, unary minus and parentheses. A reference to an empty or non-numeric value, a division
 * by zero or a malformed formula gives an empty value rather than an error, as a blank cell would.
 */

type Token = { kind: 'num'; value: number } | { kind: 'ref'; id: string } | { kind: 'op'; op: string };

function tokenize(formula: string): Token[] | null {
  const tokens: Token[] = [];
  const pattern = /\s*(?:(\d+(?:\.\d+)?)|\{(\d+)\}|([-+*/()]))/y;
  let at = 0;
  while (at < formula.length) {
    if (/^\s*$/.test(formula.slice(at))) break;
    pattern.lastIndex = at;
    const m = pattern.exec(formula);
    if (!m) return null;
    if (m[1] !== undefined) tokens.push({ kind: 'num', value: Number(m[1]) });
    else if (m[2] !== undefined) tokens.push({ kind: 'ref', id: m[2] });
    else tokens.push({ kind: 'op', op: m[3]! });
    at = pattern.lastIndex;
  }
  return tokens;
}

class Parser {
  private at = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly lookup: (id: string) => number | null,
  ) {}

  /** The value, or null when the formula cannot be evaluated. */
  run(): number | null {
    const value = this.sum();
    return this.at === this.tokens.length ? value : null;
  }

  private isOp(op: string): boolean {
    const t = this.tokens[this.at];
    return t?.kind === 'op' && t.op === op;
  }

  private sum(): number | null {
    let left = this.product();
    while (left !== null && (this.isOp('+') || this.isOp('-'))) {
      const plus = this.isOp('+');
      this.at += 1;
      const right = this.product();
      left = right === null ? null : plus ? left + right : left - right;
    }
    return left;
  }

  private product(): number | null {
    let left = this.unary();
    while (left !== null && (this.isOp('*') || this.isOp('/'))) {
      const times = this.isOp('*');
      this.at += 1;
      const right = this.unary();
      if (right === null || (!times && right === 0)) return null;
      left = times ? left * right : left / right;
    }
    return left;
  }

  private unary(): number | null {
    if (this.isOp('-')) {
      this.at += 1;
      const value = this.unary();
      return value === null ? null : -value;
    }
    return this.atom();
  }

  private atom(): number | null {
    const t = this.tokens[this.at];
    if (!t) return null;
    this.at += 1;
    if (t.kind === 'num') return t.value;
    if (t.kind === 'ref') return this.lookup(t.id);
    if (t.op !== '(') return null;
    const value = this.sum();
    if (!this.isOp(')')) return null;
    this.at += 1;
    return value;
  }
}

/** The formula's value as a decimal string, or null when it has none. */
export function evaluateFormula(formula: string, values: Record<string, string[]>): string | null {
  const tokens = tokenize(formula);
  if (!tokens) return null;
  const lookup = (id: string): number | null => {
    const text = values[id]?.[0]?.trim();
    if (!text) return null;
    const n = Number(text);
    return Number.isFinite(n) ? n : null;
  };
  const value = new Parser(tokens, lookup).run();
  if (value === null || !Number.isFinite(value)) return null;
  // Ten decimals hide binary rounding noise (0.1 + 0.2) without hiding real fractions.
  return String(Number(value.toFixed(10)));
}
