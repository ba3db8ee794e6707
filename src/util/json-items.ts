/**
 * A JSON document whose last key, `items`, lists more values than memory should hold at once (a
 * report of every file, issue 46): the text is made a part at a time as the items are read.
 */

/** Items formatted into one part of the text. */
const ITEMS_PER_PART = 256;

/**
 * The text of `JSON.stringify(transform({ ...head, items: [...items] }), null, 2)` and a newline,
 * in parts of ITEMS_PER_PART items, so that the text of every item and a transformed copy of each
 * are never in memory at once. `transform` (the CLI's redaction) must work value by value: it is
 * given the head, then each item.
 */
export function* jsonWithItems(head: Record<string, unknown>, items: Iterable<unknown>, transform: <T>(value: T) => T = (value) => value): Generator<string> {
  const text = JSON.stringify(transform(head), null, 2);
  // The head's closing brace makes way for the items, the last of its keys.
  const end = text.lastIndexOf('\n}');
  const open = end < 0 ? '{\n  "items": [' : `${text.slice(0, end)},\n  "items": [`;
  const format = (item: unknown): string => `    ${JSON.stringify(transform(item), null, 2).replaceAll('\n', '\n    ')}`;
  let part: string[] = [];
  let first = true;
  for (const item of items) {
    part.push(format(item));
    if (part.length < ITEMS_PER_PART) continue;
    yield `${first ? `${open}\n` : ',\n'}${part.join(',\n')}`;
    first = false;
    part = [];
  }
  if (first && part.length === 0) {
    yield `${open}]\n}\n`;
    return;
  }
  if (part.length > 0) yield `${first ? `${open}\n` : ',\n'}${part.join(',\n')}`;
  yield '\n  ]\n}\n';
}
