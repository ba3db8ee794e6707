/**
 * Matches `/api/v2.0/...` paths against the operation table (src/spec/operations.ts): an unknown
 * path is 404, a known path with another method 405 with `Allow`.
 */
import { OPERATIONS, INTEGER_PATH_PARAMS, type OperationSpec } from '../spec/operations.js';

interface CompiledRoute {
  op: OperationSpec;
  pattern: RegExp;
  names: string[];
}

const compiled: CompiledRoute[] = OPERATIONS.map((op) => {
  const names: string[] = [];
  const source = op.path.replace(/:([a-z_]+)/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { op, pattern: new RegExp(`^${source}$`), names };
});

export type RouteMatch =
  | { kind: 'found'; op: OperationSpec; params: Record<string, string> }
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' };

export function matchRoute(method: string, path: string): RouteMatch {
  const allow: string[] = [];
  for (const route of compiled) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    if (route.op.method !== method) {
      allow.push(route.op.method);
      continue;
    }
    const params: Record<string, string> = {};
    route.names.forEach((name, i) => {
      params[name] = decodeURIComponent(m[i + 1]!);
    });
    return { kind: 'found', op: route.op, params };
  }
  return allow.length ? { kind: 'method', allow: [...new Set(allow)] } : { kind: 'none' };
}

/** The first integer path parameter that is not a positive integer, with its value. */
export function badIntegerParam(params: Record<string, string>): [string, string] | undefined {
  for (const name of INTEGER_PATH_PARAMS) {
    const value = params[name];
    if (value !== undefined && !/^[1-9]\d{0,15}$/.test(value)) return [name, value];
  }
  return undefined;
}
