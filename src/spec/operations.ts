/**
 * Every operation of API v2 as data: method, path, and how it counts. Paths are relative to
 * `{base_url}/api/v2.0` (api-v2.md 4.2; wire-format.md fixes the ones 4.3 leaves "not shown").
 * Path parameters are written `:name`. The emulator routes by this table and the client builds its
 * requests from it, so the two cannot drift apart.
 */

/** The path of API v2 under the service's address. */
export const API_PREFIX = '/api/v2.0';

// `task`: wire-format.md, Common.
/**
 * How an operation counts toward the limits:
 * - `token`: token issuance (Basic auth, counts toward the token limit only).
 * - `read`: answers directly.
 * - `task`: answers `{task_id}`; counts toward the update limit.
 * - `write`: synchronous write (users, webhooks); not update-limited.
 */
export type OperationKind = 'token' | 'read' | 'task' | 'write';
/** The HTTP methods the API uses. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One operation of the API. */
export interface OperationSpec {
  /** Its id, such as `members.list` (what `WdsClient.call` takes). */
  readonly id: string;
  /** Its HTTP method. */
  readonly method: HttpMethod;
  /** Its path under {@link API_PREFIX}, with parameters written `:name`. */
  readonly path: string;
  /** How it counts toward the limits. */
  readonly kind: OperationKind;
  /** Whether it accepts the `Dry-Run` header. */
  readonly dryRun: boolean;
}

function op(id: string, method: HttpMethod, path: string, kind: OperationKind, dryRun = false): OperationSpec {
  return { id, method, path, kind, dryRun };
}

const ATTACHMENT_FILE = '/sheets/:sheet_id/custom_fields/:custom_field_id/file';

/** Every operation of API v2. */
export const OPERATIONS = [
  op('token.issue', 'POST', '/token', 'token'),
  op('tasks.get', 'GET', '/tasks/:task_id', 'read'),
  op('members.layout', 'GET', '/member_layouts', 'read'),
  op('members.list', 'GET', '/members', 'read'),
  op('members.register', 'POST', '/members', 'task', true),
  op('members.bulkUpdate', 'PUT', '/members', 'task', true),
  op('members.partialUpdate', 'PATCH', '/members', 'task', true),
  op('members.replaceAll', 'PUT', '/members/overwrite', 'task', true),
  op('members.delete', 'POST', '/members/delete', 'task', true),
  op('faceImages.list', 'GET', '/members/face_image', 'read'),
  op('faceImages.register', 'POST', '/members/face_image', 'task', true),
  op('faceImages.update', 'PATCH', '/members/face_image', 'task', true),
  op('sheets.layouts', 'GET', '/sheet_layouts', 'read'),
  op('sheets.layout', 'GET', '/sheet_layouts/:sheet_id', 'read'),
  op('sheets.get', 'GET', '/sheets/:sheet_id', 'read'),
  op('sheets.bulkUpdate', 'PUT', '/sheets/:sheet_id', 'task', true),
  op('sheets.partialUpdate', 'PATCH', '/sheets/:sheet_id', 'task', true),
  op('sheets.addRecords', 'POST', '/sheets/:sheet_id/add', 'task', true),
  op('attachments.list', 'GET', ATTACHMENT_FILE, 'read'),
  op('attachments.register', 'POST', ATTACHMENT_FILE, 'task', true),
  op('attachments.update', 'PATCH', ATTACHMENT_FILE, 'task', true),
  op('departments.list', 'GET', '/departments', 'read'),
  op('departments.bulkUpdate', 'PUT', '/departments', 'task', true),
  op('users.list', 'GET', '/users', 'read'),
  op('users.get', 'GET', '/users/:user_id', 'read'),
  op('users.register', 'POST', '/users', 'write', true),
  op('users.update', 'PATCH', '/users/:user_id', 'write', true),
  op('users.delete', 'DELETE', '/users/:user_id', 'write', true),
  op('roles.list', 'GET', '/roles', 'read'),
  op('advancedPermissions.list', 'GET', '/advanced_permissions/:advanced_type', 'read'),
  // api-v2.md 4.3 names no Dry-Run header for this one; the emulator refuses `Dry-Run: 1` on it
  // rather than silently replacing every setting.
  op('advancedPermissions.replace', 'PUT', '/advanced_permissions/:advanced_type', 'task'),
  op('enumOptions.list', 'GET', '/enum_options', 'read'),
  op('enumOptions.get', 'GET', '/enum_options/:custom_field_id', 'read'),
  op('enumOptions.update', 'PUT', '/enum_options/:custom_field_id', 'task', true),
  op('webhooks.list', 'GET', '/webhook', 'read'),
  op('webhooks.register', 'POST', '/webhook', 'write', true),
  op('webhooks.update', 'PATCH', '/webhook/:webhook_id', 'write', true),
  op('webhooks.delete', 'DELETE', '/webhook/:webhook_id', 'write', true),
] as const satisfies readonly OperationSpec[];

/** The id of an operation, such as `members.list` or `faceImages.update`. */
export type OperationId = (typeof OPERATIONS)[number]['id'];

const BY_ID = new Map<string, OperationSpec>(OPERATIONS.map((o) => [o.id, o]));

export function operation(id: OperationId): OperationSpec {
  const found = BY_ID.get(id);
  if (!found) throw new Error(`unknown operation ${id}`);
  return found;
}

/** Fills `:name` parameters of an operation's path, URL-encoding each value. */
export function operationPath(id: OperationId, params: Record<string, string | number> = {}): string {
  return operation(id).path.replace(/:([a-z_]+)/g, (_m, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`operation ${id} needs the path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
}

/** Path parameters whose value must be a positive integer (api-v2.md 4.2: "integer"). */
export const INTEGER_PATH_PARAMS = ['task_id', 'sheet_id', 'custom_field_id', 'user_id', 'webhook_id'] as const;
/** The two kinds of extended access settings: by member, or by department. */
export const ADVANCED_TYPES = ['member', 'department'] as const;
/** A kind of extended access settings. */
export type AdvancedType = (typeof ADVANCED_TYPES)[number];

interface CompiledRoute {
  op: OperationSpec;
  pattern: RegExp;
  names: string[];
}

const COMPILED: CompiledRoute[] = OPERATIONS.map((op) => {
  const names: string[] = [];
  const source = op.path.replace(/:([a-z_]+)/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { op, pattern: new RegExp(`^${source}$`), names };
});

export type OperationMatch =
  | { kind: 'found'; op: OperationSpec; params: Record<string, string> }
  | { kind: 'method'; allow: HttpMethod[] }
  | { kind: 'none' };

/**
 * The operation of a method and a path relative to the API root (query excluded): found, a known
 * path with another method (the methods it allows), or none.
 */
export function findOperation(method: string, path: string): OperationMatch {
  const allow: HttpMethod[] = [];
  for (const route of COMPILED) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    if (route.op.method !== method.toUpperCase()) {
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
