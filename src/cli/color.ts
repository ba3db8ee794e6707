/**
 * Colour on stderr only when a person is watching it: a terminal, and no NO_COLOR
 * (https://no-color.org: any non-empty value switches colour off).
 */
const CODES = { dim: [2, 22], red: [31, 39], yellow: [33, 39], green: [32, 39], cyan: [36, 39], bold: [1, 22] } as const;

export type Style = keyof typeof CODES;

export function useColor(stream: NodeJS.WriteStream = process.stderr): boolean {
  if (process.env.NO_COLOR) return false;
  return stream.isTTY === true;
}

export function paint(style: Style, text: string, stream: NodeJS.WriteStream = process.stderr): string {
  if (!useColor(stream)) return text;
  const [open, close] = CODES[style];
  return `\u001b[${open}m${text}\u001b[${close}m`;
}
