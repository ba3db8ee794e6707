/**
 * Where a zod issue of a YAML file is: the offset of its value (or of its unknown key, or of the
 * nearest key above it that is there) in the document, so that a problem can be printed as
 * `FILE:LINE:COLUMN: message`; and the wording of zod's issues for people editing a file. Pipeline
 * files and the emulator's config file share them.
 */
import { LineCounter, isMap, isPair, isScalar, isSeq, parseDocument, type Document, type Node } from 'yaml';

export type YamlPath = (string | number)[];

/** The parts of a zod issue read here. */
export type Issue = { code: string; path: PropertyKey[]; message?: string; keys?: string[]; errors?: Issue[][]; values?: unknown[] };

/** A union's issues say only that no branch fit: the branch that came closest says why. */
export function flattenIssues(issues: readonly Issue[]): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    if (issue.code === 'invalid_union' && issue.errors?.length) {
      const best = [...issue.errors].sort((a, b) => score(a) - score(b))[0]!;
      out.push(...flattenIssues(best.map((inner) => ({ ...withOtherChoices(inner, issue.errors!), path: [...issue.path, ...inner.path] }))));
    } else out.push(issue);
  }
  return out;
}

/**
 * A branch whose keys were wrong is further off than one whose values were; one of another type
 * altogether (a string where the value is a mapping) is furthest.
 */
const score = (branch: Issue[]): number =>
  branch.reduce((sum, i) => sum + (i.code === 'invalid_type' && i.path.length === 0 ? 4 : i.code === 'unrecognized_keys' ? 2 * (i.keys?.length ?? 1) : i.code === 'invalid_value' || i.message?.includes('received undefined') ? 3 : 1), 0);

/** A value no branch allowed at one place (`service: photo`) is told every branch's choices there, not the first one's. */
function withOtherChoices(issue: Issue, branches: Issue[][]): Issue {
  if (issue.code !== 'invalid_value' || !issue.values) return issue;
  const at = JSON.stringify(issue.path);
  const values = new Set<unknown>();
  for (const branch of branches) {
    for (const other of branch) if (other.code === 'invalid_value' && JSON.stringify(other.path) === at) for (const value of other.values ?? []) values.add(value);
  }
  if (values.size <= 1) return issue;
  return { ...issue, values: [...values], message: `Invalid option: expected one of ${[...values].map((v) => JSON.stringify(v)).join('|')}` };
}

function nodeAt(doc: Document, path: YamlPath): Node | null {
  const node = doc.getIn(path, true);
  return node && typeof node === 'object' && 'range' in (node as object) ? (node as Node) : null;
}

/** The offset an issue points at: its unknown key, or its value, or the nearest key above it that is there. */
export function placeOf(doc: Document, issue: Pick<Issue, 'code' | 'path' | 'keys'>): number {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  if (issue.code === 'unrecognized_keys' && issue.keys?.length) {
    const map = path.length ? nodeAt(doc, path) : doc.contents;
    if (isMap(map)) {
      const pair = map.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === issue.keys![0]);
      if (pair && isScalar(pair.key) && pair.key.range) return pair.key.range[0];
    }
  }
  for (let n = path.length; n > 0; n -= 1) {
    const node = nodeAt(doc, path.slice(0, n));
    // A missing value points at its mapping's first key, not at the end of the file.
    if (node?.range) return isMap(node) || isSeq(node) ? node.range[0] : node.range[0];
  }
  return doc.contents?.range?.[0] ?? 0;
}

/** A field's path as a reader writes it: `steps[0].download.concurrency`. */
export const fieldPath = (path: readonly PropertyKey[]): string =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('');

const withArticle = (word: string): string => (word === 'null' || word === 'undefined' ? word : `${/^[aeiou]/.test(word) ? 'an' : 'a'} ${word}`);

/** An issue in plain words, led by the field it is about. */
export function issueMessage(issue: Issue): string {
  const place = fieldPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys ?? [];
    return `unknown key ${keys.map((k) => `"${k}"`).join(', ')}${place ? ` in ${place}` : ''}`;
  }
  const message = issue.message ?? 'invalid';
  if (/^Invalid input: expected \w+, received undefined$/.test(message)) return `${place} is required`;
  const text = message
    .replace(/^Invalid input: expected (\w+), received (\w+)$/, (_m, want: string, got: string) => `must be ${want === 'int' ? 'a whole number' : withArticle(want)}, not ${withArticle(got)}`)
    .replace(/^Invalid option: expected one of (.*)$/, (_m, list: string) => `must be one of ${list.replaceAll('"', '').split('|').join(', ')}`)
    .replace(/^Too small: expected number to be >=(\S+)$/, 'must be at least $1')
    .replace(/^Too small: expected number to be >(\S+)$/, 'must be more than $1')
    .replace(/^Too big: expected number to be <=(\S+)$/, 'must be at most $1');
  return place ? `${place}: ${text}` : text;
}

/** The first syntax error of a parsed document, worded without the parser's own place and excerpt. */
export function syntaxProblem(doc: Document): { offset: number; message: string } | null {
  const error = doc.errors[0];
  return error ? { offset: error.pos[0], message: `YAML: ${error.message.replace(/ at line \d+, column \d+:[\s\S]*$/, '')}` } : null;
}

/** One problem of a YAML file, at its place. */
export interface FileProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

/** How a problem is printed: `FILE:LINE:COLUMN: message`, as compilers and `wds-files validate` print them. */
export const formatProblem = (p: FileProblem): string => `${p.file}:${p.line}:${p.column}: ${p.message}`;

/** YAML `text` (of `shown`) parsed, with its problems so far and how to add one at an offset of the text. */
export function openYaml(text: string, shown: string): { doc: Document; lines: LineCounter; problems: FileProblem[]; at: (offset: number, message: string) => void } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const problems: FileProblem[] = [];
  const at = (offset: number, message: string): void => {
    const { line, col } = lines.linePos(offset);
    problems.push({ file: shown, line, column: col, message });
  };
  return { doc, lines, problems, at };
}

/**
 * Reads YAML `text` (of `shown`) through `schema`, then `crossChecks` (rules between its parts);
 * answers the value, or every problem at its line and column, in the order of the file.
 */
export function checkYamlText<T>(
  text: string,
  shown: string,
  schema: { safeParse: (value: unknown) => { success: true; data: T } | { success: false; error: { issues: readonly Issue[] } } },
  /** What the file must be at its top, said when it is no mapping: `an emulator config is a YAML mapping (companies:, clock:)`. */
  mapping: string,
  crossChecks: (value: T) => { path: YamlPath; message: string }[] = () => [],
): { value: T; problems: []; locate: (path: YamlPath, message: string) => FileProblem } | { value: null; problems: FileProblem[] } {
  const { doc, problems, at } = openYaml(text, shown);
  // After the first syntax error the parser's view of the rest is guesswork: one message says enough.
  const syntax = syntaxProblem(doc);
  if (syntax) at(syntax.offset, syntax.message);
  else if (!isMap(doc.contents)) at(doc.contents?.range?.[0] ?? 0, mapping);
  else {
    const parsed = schema.safeParse(doc.toJS());
    if (!parsed.success) for (const issue of flattenIssues(parsed.error.issues)) at(placeOf(doc, issue), issueMessage(issue));
    else for (const { path, message } of crossChecks(parsed.data)) at(placeOf(doc, { code: 'custom', path }), message);
    if (parsed.success && problems.length === 0) {
      // For the checks a caller makes later (the disk's): a problem at the place of `path`.
      const locate = (path: YamlPath, message: string): FileProblem => {
        at(placeOf(doc, { code: 'custom', path }), message);
        return problems.pop()!;
      };
      return { value: parsed.data, problems: [], locate };
    }
  }
  const seen = new Set<string>();
  const unique = problems.filter((p) => !seen.has(formatProblem(p)) && seen.add(formatProblem(p)));
  return { value: null, problems: unique.sort((a, b) => a.line - b.line || a.column - b.column) };
}
