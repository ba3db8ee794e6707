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

/**
 * The message for yargs' "Unknown argument(s): a, b", or undefined for any other message. `raw`
 * is the command line as typed: it tells `--concurency` (an option) from `phots` (a command).
 */
export function unknownWordMessage(message: string | null | undefined, usage: unknown, y: Argv, raw: string[]): string | undefined {
  const match = /^Unknown arguments?: (.+)$/.exec(message ?? '');
  if (!match) return undefined;
  const word = match[1]!.split(', ')[0]!;
  const asOption = raw.some((w) => w === `--${word}` || w.startsWith(`--${word}=`) || w === `-${word}`);
  if (asOption) {
    const options = Object.keys((y as unknown as { getOptions(): { key: Record<string, unknown> } }).getOptions().key).filter((k) => k.length > 1 && !/[A-Z]/.test(k));
    const suggestion = closest(word, options);
    const dashes = word.length === 1 ? '-' : '--';
    return `Unknown option "${dashes}${word}".${suggestion ? ` Did you mean "--${suggestion.name}"?` : ''}`;
  }
  const commands = (usage as Usage).getCommands().map(([cmd]) => cmd.split(' ')[0]!);
  const suggestion = closest(word, commands);
  if (!commands.length) return `Unexpected argument "${word}".`;
  return `Unknown command "${word}".${suggestion ? ` Did you mean "${suggestion.name}"?` : ''}`;
}
