/**
 * Every number option of every command, checked once before the command runs: yargs turns
 * `--concurrency abc` into NaN, and a message saying "got NaN" tells the user nothing. The rule of
 * a known option is named with the word that was typed; any other number option that is not a
 * number is refused the same way.
 */
import { z } from 'zod';
import { UsageError } from './connection.js';

interface NumberRule {
  whole: boolean;
  min?: number;
  max?: number;
  /** The lower bound is excluded (a speed above 0). */
  above?: boolean;
}

const RULES: Record<string, NumberRule> = {
  concurrency: { whole: true, min: 1, max: 256 },
  port: { whole: true, min: 0, max: 65535 },
  'status-port': { whole: true, min: 0, max: 65535 },
  generate: { whole: true, min: 0 },
  sheet: { whole: true, min: 1 },
  field: { whole: true, min: 1 },
  'clock-speed': { whole: false, min: 0, above: true },
};

function describeRule(rule: NumberRule | undefined): string {
  if (!rule) return 'a number';
  const kind = rule.whole ? 'a whole number' : 'a number';
  if (rule.above) return `${kind} above ${rule.min}`;
  if (rule.min !== undefined && rule.max !== undefined) return `${kind} from ${rule.min} to ${rule.max}`;
  if (rule.min !== undefined) return `${kind} of at least ${rule.min}`;
  return kind;
}

function schemaOf(rule: NumberRule | undefined): z.ZodNumber {
  // z.number() refuses NaN and the infinities.
  let schema = rule?.whole ? z.number().int() : z.number();
  if (rule?.min !== undefined) schema = rule.above ? schema.gt(rule.min) : schema.gte(rule.min);
  if (rule?.max !== undefined) schema = schema.lte(rule.max);
  return schema;
}

/** What the user typed after `--name` (or in `--name=value`), for the message. */
function typed(raw: string[], name: string): string | undefined {
  for (const [i, word] of raw.entries()) {
    if (word === `--${name}`) return raw[i + 1];
    if (word.startsWith(`--${name}=`)) return word.slice(name.length + 3);
  }
  return undefined;
}

/**
 * Refuses, with a usage error naming the option, its rule and the word typed, any number option
 * given a value that is not a number or breaks its rule. `raw` is the command line as typed.
 */
export function checkNumberOptions(argv: Record<string, unknown>, raw: string[]): void {
  for (const [name, value] of Object.entries(argv)) {
    // yargs keeps a camelCase copy of each kebab-case option; the kebab one is checked.
    if (typeof value !== 'number' || /[A-Z]/.test(name) || name.length === 1 || name === '$0') continue;
    const rule = RULES[name];
    if (schemaOf(rule).safeParse(value).success) continue;
    const word = typed(raw, name) ?? String(value);
    throw new UsageError(`--${name} must be ${describeRule(rule)}, got "${word}"`);
  }
}
