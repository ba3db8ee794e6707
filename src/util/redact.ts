/**
 * Secrets never appear in logs, errors or reports (the brief's standards). Every secret the
 * process learns (consumer secret, access tokens, webhook secret tokens) is registered here, and
 * `redact` replaces each with a marker; header-shaped text is masked even for secrets not
 * registered.
 */
const secrets = new Set<string>();

/** Registers a value that must never be shown. Values shorter than 4 characters are ignored. */
export function registerSecret(value: string | null | undefined): void {
  if (value && value.length >= 4) secrets.add(value);
}

export function forgetSecret(value: string): void {
  secrets.delete(value);
}

const HEADER_PATTERNS: RegExp[] = [
  /(service-token["']?\s*[:=]\s*["']?)[^\s"',}]+/gi,
  /(authorization["']?\s*[:=]\s*["']?(?:basic|bearer)\s+)[^\s"',}]+/gi,
  /(access_token["']?\s*[:=]\s*["']?)[^\s"',}]+/gi,
  /(consumer_secret["']?\s*[:=]\s*["']?)[^\s"',}]+/gi,
  /(secret_token["']?\s*[:=]\s*["']?)[^\s"',}]+/gi,
];

export const REDACTED = '[REDACTED]';

export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const pattern of HEADER_PATTERNS) out = out.replace(pattern, `$1${REDACTED}`);
  return out;
}

/** Redacts every string inside a JSON-like value (for reports and error details). */
export function redactValue<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactValue(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = /secret|token|password|authorization/i.test(k) && typeof v === 'string' ? REDACTED : redactValue(v);
    }
    return out as T;
  }
  return value;
}
