/**
 * Secrets never appear in logs, errors or reports (the brief's standards; DESIGN.md section 8,
 * "Secrets in answers"). Every secret the process learns (consumer secret, access tokens, webhook
 * secret tokens, passwords) is registered here, and `redact` replaces each with a marker;
 * header-shaped text and secret fields (`secret_token`, `password`) are masked even when not
 * registered. `redactValue` masks a JSON-like value: reports, summaries and printed answers.
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
];

/**
 * Secret fields written as `key: value`, `"key": "value"` or `key=value`: the service's answers
 * carry `secret_token` (webhooks) and `password` (users), requests and tokens the others. A quoted
 * value is masked whole, spaces and escaped quotes included, also inside a JSON string (a body
 * quoted in a message); null, true and false are left as they are (no secret is set). A field named
 * by its path (`connection.consumer_secret: must be a string`) is a problem's message about the
 * field, which never quotes its value: masking its first word made it unreadable.
 */
const SECRET_FIELD = /(?<!\.)((?:secret_token|password|access_token|consumer_secret)(?:\\?["'])?\s*[:=]\s*)(?!(?:null|true|false)\b)(\\"(?:[^"\\]|\\\\\\"|\\\\\\\\|\\\\[^"\\])*\\"|"(?:[^"\\]|\\.)*"?|'[^']*'?|[^\s"',}&\\]+)/gi;
/** The same fields as keys of an answer. */
const SECRET_FIELD_KEY = /^(?:secret_token|password|access_token|consumer_secret)$/i;

export const REDACTED = '[REDACTED]';

/** What stands for a URL's user name and password, and for each query value, in a URL shown to the user. */
export const URL_MASK = '***';

/** `scheme://user:password@` anywhere in a text: the user part is masked whole (it may be a token alone). */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#"'<>]+@/gi;

export function redact(text: string): string {
  // Fields and headers first: a registered secret that is also a word of a field's name (a
  // consumer secret "secret", say) would otherwise be masked inside "secret_token", and the
  // field, no longer found, would show its value.
  let out = text.replace(URL_USERINFO, `$1${URL_MASK}@`);
  for (const pattern of HEADER_PATTERNS) out = out.replace(pattern, `$1${REDACTED}`);
  out = out.replace(SECRET_FIELD, (_, key: string, value: string) => {
    const quote = value.startsWith('\\"') ? '\\"' : value[0] === '"' || value[0] === "'" ? value[0] : '';
    return `${key}${quote}${REDACTED}${quote}`;
  });
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/**
 * A URL as it may be printed: its user name and password masked, and every query value, since
 * `?token=...` or `?sig=...` is how many services put a secret in an address. With `path: 'hide'`
 * only the scheme, masked user part and host are shown: a webhook's path is often itself the
 * secret (`/hooks/T0123/B0456/XXXX`), and no rule tells such a path from a harmless one. A text
 * that is not a URL is masked the same way by pattern, so a typo never shows what it carried.
 */
export function redactUrl(url: string, options: { path?: 'keep' | 'hide' } = {}): string {
  // `u:secret@host` parses as a URL of scheme `u:` with no host: only a URL with a host is taken apart.
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (!parsed?.host) {
    // Not a URL: everything up to the last `@` may be a user name and password, typed with a `/` or `#`.
    const masked = url.replace(/^((?:[a-z][a-z0-9+.-]*:)?\/\/)?[^]*@/i, (_, scheme: string | undefined) => `${scheme ?? ''}${URL_MASK}@`);
    const cut = /^((?:[a-z][a-z0-9+.-]*:\/\/)?[^/?#]*)([/?#][^]*)?$/i.exec(masked)!;
    if (!cut[2]) return redact(masked);
    if (options.path === 'hide') return redact(cut[1]!);
    return redact(`${cut[1]}${cut[2].replace(/#[^]*$/, '').replace(/([?&][^=&]*=)[^&]*/g, `$1${URL_MASK}`)}`);
  }
  const userinfo = parsed.username || parsed.password ? `${URL_MASK}@` : '';
  const root = `${parsed.protocol}//${userinfo}${parsed.host}`;
  if (options.path === 'hide') return redact(root);
  const query = [...parsed.searchParams.keys()].map((key) => `${encodeURIComponent(key)}=${URL_MASK}`).join('&');
  return redact(`${root}${parsed.pathname}${query ? `?${query}` : ''}`);
}

/** Keys whose string values are secrets wherever they appear. */
const SECRET_KEY = /secret|token|password|authorization/i;

/** Redacts every string inside a JSON-like value (for reports, answers and error details). */
export function redactValue<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactValue(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = SECRET_KEY.test(k) && typeof v === 'string' ? REDACTED : redactValue(v);
    }
    return out as T;
  }
  return value;
}

/** Registers every secret-named string inside a value (an answer of the service), so later log lines mask it too. */
export function registerSecretsIn(value: unknown): void {
  if (Array.isArray(value)) {
    for (const v of value) registerSecretsIn(v);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (SECRET_FIELD_KEY.test(k) && typeof v === 'string') registerSecret(v);
      else registerSecretsIn(v);
    }
  }
}
