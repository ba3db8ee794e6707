/**
 * The 16 operations of the legacy interface (api-v1-legacy.md 4): their paths, the version each
 * arrived in, and whether sending one twice could change data twice. The client refuses an
 * operation its version lacks before spending a request of the hourly budget on a 404.
 */
import { OptionsError } from '../errors.js';

/** A version of the legacy interface. */
export type LegacyVersion = 'v1.0' | 'v1.1' | 'v1.2';
export const LEGACY_VERSIONS: readonly LegacyVersion[] = ['v1.0', 'v1.1', 'v1.2'];

/** `read`: safe to send again; `update`: answers a progress id, never repeated blindly. */
export type LegacyKind = 'token' | 'read' | 'update';

interface LegacyOperation {
  number: number;
  pattern: RegExp;
  since: LegacyVersion;
  kind: LegacyKind;
}

const SHEET = String.raw`sheet/\d+`;
const ID = String.raw`[^/]+`;

const OPERATIONS: LegacyOperation[] = [
  { number: 1, pattern: /^get_token$/, since: 'v1.0', kind: 'token' },
  { number: 2, pattern: /^user$/, since: 'v1.0', kind: 'read' },
  { number: 3, pattern: /^user\/overwrite$/, since: 'v1.0', kind: 'update' },
  { number: 4, pattern: /^user\/add$/, since: 'v1.0', kind: 'update' },
  { number: 5, pattern: /^department$/, since: 'v1.0', kind: 'read' },
  { number: 6, pattern: /^department\/overwrite$/, since: 'v1.0', kind: 'update' },
  { number: 7, pattern: /^department\/add$/, since: 'v1.0', kind: 'update' },
  { number: 8, pattern: new RegExp(`^${SHEET}$`), since: 'v1.0', kind: 'read' },
  { number: 9, pattern: new RegExp(`^${SHEET}/data/overwrite$`), since: 'v1.0', kind: 'update' },
  { number: 10, pattern: new RegExp(`^${SHEET}/data/add$`), since: 'v1.0', kind: 'update' },
  { number: 11, pattern: new RegExp(`^task/${ID}$`), since: 'v1.0', kind: 'read' },
  // Starting a job twice only leaves one unread: no data changes, so a lost answer may be retried.
  { number: 12, pattern: new RegExp(`^${SHEET}/preset$`), since: 'v1.1', kind: 'read' },
  { number: 13, pattern: new RegExp(`^${SHEET}/task/${ID}$`), since: 'v1.1', kind: 'read' },
  { number: 14, pattern: new RegExp(`^${SHEET}/get/${ID}$`), since: 'v1.1', kind: 'read' },
  { number: 15, pattern: new RegExp(`^${SHEET}/data/update$`), since: 'v1.2', kind: 'update' },
  { number: 16, pattern: new RegExp(`^${SHEET}/data/delete$`), since: 'v1.2', kind: 'update' },
];

/** The path without slashes around it, the query left out. */
export function normalisePath(path: string): string {
  return path.split('?')[0]!.replace(/^\/+|\/+$/g, '');
}

/** The operation a path names, or undefined for a path the document does not list. */
export function operationOf(path: string): LegacyOperation | undefined {
  const p = normalisePath(path);
  return OPERATIONS.find((op) => op.pattern.test(p));
}

/**
 * How a path is treated: a path the document does not list is taken as an update, so that a lost
 * answer is never sent again on a guess.
 */
export function kindOf(path: string): LegacyKind {
  return operationOf(path)?.kind ?? 'update';
}

/** Throws when `version` lacks the operation at `path` (12-14 need v1.1, 15-16 v1.2). */
export function checkVersion(path: string, version: LegacyVersion): void {
  const op = operationOf(path);
  if (op && LEGACY_VERSIONS.indexOf(op.since) > LEGACY_VERSIONS.indexOf(version)) {
    throw new OptionsError(
      `operation ${op.number} (/${normalisePath(path)}) needs legacy version ${op.since} or later; the client is set to ${version}`,
    );
  }
}
