/**
 * The service's limits, as data. api-v2.md section 8 and 4.4; one constant, one place: the emulator
 * enforces these and the client plans by them.
 */

/** 5 MB per photo or attachment (api-v2.md 4.4 Members 7, Sheets 9), counted in binary megabytes. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;
/** Face images: at most 100 members per request (api-v2.md 4.4 Members 7). */
export const MAX_PHOTOS_PER_REQUEST = 100;
/** Attachments: at most 1,000 files per request (api-v2.md 4.4 Sheets 9). */
export const MAX_ATTACHMENTS_PER_REQUEST = 1000;
/** Request size: at most 250 MB (api-v2.md 8), counted like MAX_FILE_BYTES. */
export const MAX_REQUEST_BYTES = 250 * 1024 * 1024;
/** Download URLs are valid 15 minutes (api-v2.md 4.4 Members 6, Sheets 6). */
export const DOWNLOAD_URL_LIFETIME_SECONDS = 15 * 60;
/** Access tokens are valid one hour (api-v2.md 5.4). */
export const TOKEN_LIFETIME_SECONDS = 3600;
/** Update requests: 5 a minute per company (api-v2.md 8). */
export const UPDATE_REQUESTS_PER_MINUTE = 5;
/** All requests: 3,000 an hour per company (api-v2.md 8). */
export const REQUESTS_PER_HOUR = 3000;
/** Token issuance: 1,000 an hour per company (api-v2.md 8). */
export const TOKENS_PER_HOUR = 1000;
/** At most 10 webhook settings (api-v2.md 4.4 Webhook settings, 6.4). */
export const MAX_WEBHOOK_SETTINGS = 10;
/** A webhook delivery carries at most 10,000 member codes (api-v2.md 6.3). */
export const MAX_WEBHOOK_CODES_PER_DELIVERY = 10_000;
/** A webhook receiver must answer within 10 seconds (api-v2.md 6.1). */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** Extended access settings per user: additions and exclusions each (api-v2.md 4.4). */
export const MAX_ADVANCED_PERMISSION_CODES = { member: 30_000, department: 1_000 } as const;
/** Daily maintenance (backup) window, service local time, minutes after midnight (api-v2.md 8). */
export const MAINTENANCE_WINDOW = { startMinute: 60, endMinute: 90 } as const;

/** Base64 makes 3 bytes into 4 characters (with padding): the size a file adds to a JSON body. */
export function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}
