/** Exit codes of every command (DESIGN.md section 3). */
export const EXIT = {
  ok: 0,
  fatal: 1,
  usage: 2,
  /** Finished, but some items were invalid, conflicting or failed. */
  partial: 3,
} as const;
