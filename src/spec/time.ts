/** Service timestamps: `YYYY-MM-DD HH:MM:SS` and dates `YYYY-MM-DD`, in service local time. */

/** A service timestamp `YYYY-MM-DD HH:MM:SS`. */
export const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
/** A date `YYYY-MM-DD` (its form only: see {@link isValidDate}). */
export const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** True for a real calendar date written `YYYY-MM-DD`. */
export function isValidDate(value: string): boolean {
  if (!DATE_PATTERN.test(value)) return false;
  const [y, m, d] = value.split('-').map(Number) as [number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}
