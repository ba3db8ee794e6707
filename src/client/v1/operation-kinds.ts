/**
 * How `legacy api` tells the operations of the legacy interface apart before sending anything:
 * the client's table (path, version) with a name for messages, and what kind of call each is: a
 * read answers data and has a header-only dry run, an update answers a progress_id and has a
 * validating dry run, and the task and asynchronous-read operations have neither.
 */
import { LEGACY_VERSIONS, operationOf, type LegacyVersion } from './operations.js';

export { LEGACY_VERSIONS, type LegacyVersion };
export const LATEST_LEGACY_VERSION: LegacyVersion = 'v1.2';

export type OperationKind = 'token' | 'read' | 'update' | 'task' | 'async-start' | 'async-poll';

export interface LegacyOperation {
  number: number;
  name: string;
  since: LegacyVersion;
  kind: OperationKind;
}

const NAMES: Record<number, string> = {
  1: 'get token', 2: 'get users', 3: 'overwrite users', 4: 'add users', 5: 'get departments',
  6: 'overwrite departments', 7: 'add departments', 8: 'get sheet', 9: 'overwrite sheet', 10: 'add sheet data',
  11: 'get task', 12: 'start an asynchronous sheet read', 13: 'asynchronous read progress',
  14: 'asynchronous read result', 15: 'partial update of a sheet', 16: 'partial delete',
};

/** The client counts 11 to 14 as reads (safe to send again); for the CLI they have no dry run and no --wait. */
const SPECIAL_KINDS: Record<number, OperationKind> = { 11: 'task', 12: 'async-start', 13: 'async-poll', 14: 'async-poll' };

/** The operation a path (without the `/api/v1.x` prefix) names, or null. */
export function findLegacyOperation(path: string): LegacyOperation | null {
  const op = operationOf(path);
  if (!op) return null;
  return { number: op.number, name: NAMES[op.number] ?? `operation ${op.number}`, since: op.since, kind: SPECIAL_KINDS[op.number] ?? op.kind };
}

export const versionAtLeast = (version: LegacyVersion, since: LegacyVersion): boolean =>
  LEGACY_VERSIONS.indexOf(version) >= LEGACY_VERSIONS.indexOf(since);

export const isLegacyVersion = (text: unknown): text is LegacyVersion => LEGACY_VERSIONS.includes(text as LegacyVersion);
