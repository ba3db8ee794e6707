/**
 * "Unknown command "phots". Did you mean "photos"?": yargs' own suggestion leaves out the word
 * that was typed, and says nothing for a misspelt option. The candidates are the commands and
 * options of the level where parsing stopped.
 */
import type { Argv } from 'yargs';

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

function closest(word: string, candidates: string[]): { name: string; d: number } | undefined {
  let best: { name: string; d: number } | undefined;
  for (const name of candidates) {
    const d = distance(word.toLowerCase(), name.toLowerCase());
    if (!best || d < best.d) best = { name, d };
  }
  return best && best.d <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/** What yargs hands its fail handler: the usage of the level where parsing stopped. */
interface Usage {
  getCommands(): Array<[string, ...unknown[]]>;
}

/** The options of the level where parsing stopped, aliases included, as they may be typed. */
function knownOptions(y: Argv): Set<string> {
  const { key, alias } = (y as unknown as { getOptions(): { key: Record<string, unknown>; alias: Record<string, string[]> } }).getOptions();
  return new Set([...Object.keys(key), ...Object.values(alias).flat()]);
}

/** The first `--name` typed that the level does not know, if any (`--no-name` of a known one is known). */
function unknownLongOption(raw: string[], known: Set<string>): string | undefined {
  for (const word of raw) {
    if (word === '--') return undefined;
    if (!/^--[^-]/.test(word)) continue;
    const name = word.slice(2).split('=')[0]!;
    if (!known.has(name) && !(name.startsWith('no-') && known.has(name.slice(3)))) return name.startsWith('no-') ? name.slice(3) : name;
  }
  return undefined;
}

/** `negated`: typed as `--no-WORD`, which yargs reports as WORD. */
function unknownOptionMessage(word: string, known: Set<string>, negated = false): string {
  const suggestion = closest(word, [...known].filter((k) => k.length > 1 && !/[A-Z]/.test(k)));
  const dashes = word.length === 1 && !negated ? '-' : negated ? '--no-' : '--';
  return `Unknown option "${dashes}${word}".${suggestion ? ` Did you mean "${negated ? '--no-' : '--'}${suggestion.name}"?` : ''}`;
}

/**
 * The message for a usage error yargs found, when the line holds a word it does not know, or
 * undefined to keep yargs' message. A misspelt command is named before the options that followed
 * it (`photos exprot --out x`: the command, not `--out`, is what is wrong), and a misspelt option
 * before the required option it left missing (`--outt x`: not "Missing required argument: out").
 * `raw` is the command line as typed: it tells `--concurency` (an option) from `phots` (a command).
 */
export function unknownWordMessage(message: string | null | undefined, usage: unknown, y: Argv, raw: string[]): string | undefined {
  const known = knownOptions(y);
  const match = /^Unknown arguments?: (.+)$/.exec(message ?? '');
  if (!match) {
    const option = unknownLongOption(raw, known);
    return option === undefined ? undefined : unknownOptionMessage(option, known, raw.some((w) => w === `--no-${option}` || w.startsWith(`--no-${option}=`)));
  }
  const typedAs = (word: string, prefix: string): boolean => raw.some((w) => w === `${prefix}${word}` || w.startsWith(`${prefix}${word}=`));
  const typedAsOption = (word: string): boolean => typedAs(word, '--') || typedAs(word, '-') || typedAs(word, '--no-');
  const words = match[1]!.split(', ');
  const commands = (usage as Usage).getCommands().map(([cmd]) => cmd.split(' ')[0]!);
  const commandWord = commands.length ? words.find((w) => !typedAsOption(w)) : undefined;
  const word = commandWord ?? words[0]!;
  if (typedAsOption(word)) return unknownOptionMessage(word, known, !typedAs(word, '--') && !typedAs(word, '-'));
  if (!commands.length) return `Unexpected argument "${word}".`;
  const suggestion = closest(word, commands);
  return `Unknown command "${word}".${suggestion ? ` Did you mean "${suggestion.name}"?` : ''}`;
}
