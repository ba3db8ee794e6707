/**
 * Routing of `/api/v2.0/...` by the operation table (src/spec/operations.ts `findOperation`): an
 * unknown path is 404, a known path with another method 405 with `Allow`.
 */
import { INTEGER_PATH_PARAMS } from '../spec/operations.js';

export { findOperation as matchRoute } from '../spec/operations.js';

/** The first integer path parameter that is not a positive integer, with its value. */
export function badIntegerParam(params: Record<string, string>): [string, string] | undefined {
  for (const name of INTEGER_PATH_PARAMS) {
    const value = params[name];
    if (value !== undefined && !/^[1-9]\d{0,15}$/.test(value)) return [name, value];
  }
  return undefined;
}
