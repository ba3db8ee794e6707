/**
 * Where an export's files came from: the service's address and the company, recorded in every
 * manifest (its first line, `{"kind":"source",...}`) and every `snapshot.json`, so that a run
 * with another company's credentials never mixes that company's files into a target, and a
 * person can tell afterwards whose files a folder, zip or archive holds. Neither holds a secret.
 */
import { createHash } from 'node:crypto';
import { TargetRefusedError } from './target-error.js';

/** The source of a target's files. */
export interface ExportSource {
  /** The service's base URL, normalised: no credentials, query or fragment, no trailing slash. */
  base_url: string;
  /**
   * The company: the first 16 hex digits of the sha256 of its consumer key. The key is not a
   * secret, but it is not shown either: the hash tells two companies apart and gives nothing away.
   */
  company: string;
}

/** The company id of a consumer key. */
export function companyOf(consumerKey: string): string {
  return createHash('sha256').update(consumerKey).digest('hex').slice(0, 16);
}

/**
 * A base URL as a source records it: scheme and host as URL parsing gives them (lower case, no
 * default port), without user name, password, query or fragment, and without a trailing `/` or
 * `/api/v2.0` (as the client takes it).
 */
export function normalBaseUrl(url: string): string {
  if (!URL.canParse(url)) return url;
  const parsed = new URL(url);
  const path = parsed.pathname.replace(/\/+$/, '').replace(/\/api\/v2\.0$/, '');
  return `${parsed.protocol}//${parsed.host}${path}`;
}

/** The source of a run against `baseUrl` with `consumerKey`. */
export function sourceOf(baseUrl: string, consumerKey: string): ExportSource {
  return { base_url: normalBaseUrl(baseUrl), company: companyOf(consumerKey) };
}

/**
 * Whether a target recorded as `recorded` may take files from `source`. The company decides, not
 * the address: limits and journals are the company's (keyed by its consumer key), and the same
 * service reached by another host name (a new domain, a proxy) holds the same files.
 */
export function sameSource(recorded: ExportSource, source: ExportSource): boolean {
  return recorded.company === source.company;
}

/** A source as a message names it. */
export function describeSource(source: ExportSource): string {
  return `${source.base_url} (company ${source.company})`;
}

/** The first line of a manifest. */
export function sourceLineText(source: ExportSource): string {
  return `${JSON.stringify({ kind: 'source', base_url: source.base_url, company: source.company })}\n`;
}

/** The source a parsed JSON value records, or null when it is none (not an object with both strings). */
export function readSource(value: unknown): ExportSource | null {
  if (typeof value !== 'object' || value === null) return null;
  const { base_url: baseUrl, company } = value as Record<string, unknown>;
  return typeof baseUrl === 'string' && typeof company === 'string' ? { base_url: baseUrl, company } : null;
}

/** A run into a target another company's files are in: refused before anything is written (exit 2 in the CLI). */
export class SourceMismatchError extends TargetRefusedError {
  override name = 'SourceMismatchError';

  constructor(readonly target: string, readonly recorded: ExportSource, readonly source: ExportSource) {
    super(
      `${target} holds the files of ${describeSource(recorded)}, and this run connects to ${describeSource(source)}, another company: `
      + 'its files would be mixed with the others. Name another target for this company, or check the base URL and consumer key; nothing was changed',
    );
  }
}
