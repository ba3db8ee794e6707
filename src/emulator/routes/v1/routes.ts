/**
 * The 16 operations of api-v1-legacy.md 4 as a table: path, first version, handler. A path whose
 * operation came in a later version answers 404 like an unknown path (wire-format.md, Legacy v1.x).
 */
import type { LegacyHandler, LegacyVersion } from './context.js';
import { listUsers, overwriteUsers, addUsers } from './users.js';
import { listDepartments, overwriteDepartments, addDepartments } from './departments.js';
import { getSheet } from './sheet-read.js';
import { overwriteSheet, addSheetData, updateSheetData, deleteSheetData } from './sheet-write.js';
import { getTask } from './tasks.js';
import { presetSheet, asyncProgress, asyncResult } from './async-read.js';

export const LEGACY_VERSIONS: readonly LegacyVersion[] = ['v1.0', 'v1.1', 'v1.2'];

interface LegacyRoute {
  number: number;
  pattern: RegExp;
  names: string[];
  since: LegacyVersion;
  /** Absent for the token operation, which the server answers itself. */
  handler?: LegacyHandler;
  /** The route as counted in the stats: `POST /v1/sheet/:sheet_id`. */
  key: string;
}

function route(number: number, path: string, since: LegacyVersion, handler?: LegacyHandler): LegacyRoute {
  const names: string[] = [];
  const pattern = new RegExp(`^${path.replace(/\{(\w+)\}/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  })}$`);
  return { number, pattern, names, since, handler, key: `POST /v1${path.replace(/\{(\w+)\}/g, ':$1')}` };
}

export const LEGACY_ROUTES: readonly LegacyRoute[] = [
  route(1, '/get_token', 'v1.0'),
  route(2, '/user', 'v1.0', listUsers),
  route(3, '/user/overwrite', 'v1.0', overwriteUsers),
  route(4, '/user/add', 'v1.0', addUsers),
  route(5, '/department', 'v1.0', listDepartments),
  route(6, '/department/overwrite', 'v1.0', overwriteDepartments),
  route(7, '/department/add', 'v1.0', addDepartments),
  route(8, '/sheet/{sheet_id}', 'v1.0', getSheet),
  route(9, '/sheet/{sheet_id}/data/overwrite', 'v1.0', overwriteSheet),
  route(10, '/sheet/{sheet_id}/data/add', 'v1.0', addSheetData),
  route(11, '/task/{progress_id}', 'v1.0', getTask),
  route(12, '/sheet/{sheet_id}/preset', 'v1.1', presetSheet),
  route(13, '/sheet/{sheet_id}/task/{progress_id}', 'v1.1', asyncProgress),
  route(14, '/sheet/{sheet_id}/get/{progress_id}', 'v1.1', asyncResult),
  route(15, '/sheet/{sheet_id}/data/update', 'v1.2', updateSheetData),
  route(16, '/sheet/{sheet_id}/data/delete', 'v1.2', deleteSheetData),
];

export function findLegacyRoute(version: LegacyVersion, path: string): { route: LegacyRoute; params: Record<string, string> } | null {
  for (const candidate of LEGACY_ROUTES) {
    const m = candidate.pattern.exec(path);
    if (!m) continue;
    if (LEGACY_VERSIONS.indexOf(version) < LEGACY_VERSIONS.indexOf(candidate.since)) return null;
    const params: Record<string, string> = {};
    candidate.names.forEach((name, i) => {
      params[name] = decodeURIComponent(m[i + 1]!);
    });
    return { route: candidate, params };
  }
  return null;
}
