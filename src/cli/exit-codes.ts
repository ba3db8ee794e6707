/** Exit codes of every command (DESIGN.md section 3). */
export const EXIT = {
  ok: 0,
  fatal: 1,
  usage: 2,
  /** Finished, but some items were invalid, conflicting or failed. */
  partial: 3,
  /** Stopped by SIGINT (Ctrl-C) after ending the work in flight; a rerun continues. */
  sigint: 130,
  /** Stopped by SIGTERM after ending the work in flight; a rerun continues. */
  sigterm: 143,
} as const;
