/**
 * The service's limits, as data. api-v2.md section 8 and 4.4; one constant, one place: the emulator
 * enforces these and the client plans by them. The section each comes from is in a line comment,
 * so that the docs users read speak of the limit alone.
 */

// api-v2.md 4.4 Members 7, Sheets 9.
/** At most 5 MB per photo or attachment, counted in binary megabytes (5,242,880 bytes). */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;
// api-v2.md 4.4 Members 7.
/** Face images: at most 100 members per request. */
export const MAX_PHOTOS_PER_REQUEST = 100;
// api-v2.md 4.4 Sheets 9.
/** Attachments: at most 1,000 files per request. */
export const MAX_ATTACHMENTS_PER_REQUEST = 1000;
// api-v2.md 8.
/** A request's body: at most 250 MB, counted like {@link MAX_FILE_BYTES}; files go in it as base64 (4 characters for 3 bytes). */
export const MAX_REQUEST_BYTES = 250 * 1024 * 1024;
// api-v2.md 4.4 Members 6, Sheets 6.
/** Download URLs are valid 15 minutes. */
export const DOWNLOAD_URL_LIFETIME_SECONDS = 15 * 60;
// api-v2.md 5.4.
/** Access tokens are valid one hour. */
export const TOKEN_LIFETIME_SECONDS = 3600;
// api-v2.md 8 (these three).
/** Update requests (those that answer a task): 5 a minute per company. */
export const UPDATE_REQUESTS_PER_MINUTE = 5;
/** All requests: 3,000 an hour per company. */
export const REQUESTS_PER_HOUR = 3000;
/** Token issuance: 1,000 an hour per company. */
export const TOKENS_PER_HOUR = 1000;
// api-v2.md 4.4 Webhook settings, 6.4.
/** At most 10 webhook settings. */
export const MAX_WEBHOOK_SETTINGS = 10;
// api-v2.md 6.3.
/** A webhook delivery carries at most 10,000 member codes. */
export const MAX_WEBHOOK_CODES_PER_DELIVERY = 10_000;
// api-v2.md 6.1.
/** A webhook receiver must answer within 10 seconds. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
// api-v2.md 4.4.
/** Extended access settings per user: at most this many additions, and as many exclusions. */
export const MAX_ADVANCED_PERMISSION_CODES = {
  /** Member codes. */
  member: 30_000,
  /** Department codes. */
  department: 1_000,
} as const;
// api-v2.md 8.
/** The daily maintenance (backup) window, in the service's local time: 01:00 to 01:30. */
export const MAINTENANCE_WINDOW = {
  /** Minutes after midnight when it starts. */
  startMinute: 60,
  /** Minutes after midnight when it ends. */
  endMinute: 90,
} as const;

/** Base64 makes 3 bytes into 4 characters (with padding): the size a file adds to a JSON body. */
export function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}
