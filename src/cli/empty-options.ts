/**
 * An option typed without its value (`--out` at the end of the line, or `--report ""`): yargs
 * gives it as an empty string, which a path resolves to the working folder, so `photos export
 * --out` would write there, and `photos import "$DIR"` with DIR unset would send its files. Every
 * such option or argument is a usage error naming it instead.
 */
import { UsageError } from './connection.js';

/** Refuses any option or positional argument given on the command line `raw` with an empty value. */
export function checkEmptyOptions(argv: Record<string, unknown>, raw: string[]): void {
  for (const [name, value] of Object.entries(argv)) {
    // yargs keeps a camelCase copy of each kebab-case option; positionals are not flags typed.
    if (value !== '' || /[A-Z]/.test(name) || name === '$0') continue;
    const flag = name.length === 1 ? `-${name}` : `--${name}`;
    if (raw.some((word) => word === flag || word.startsWith(`${flag}=`))) throw new UsageError(`${flag} needs a value`);
    // An empty word typed where a path goes (`"$DIR"` with DIR unset) would be the working folder.
    if (name.length > 1 && raw.includes('')) throw new UsageError(`the ${name} argument is empty`);
  }
}
