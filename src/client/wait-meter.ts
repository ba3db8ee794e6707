/**
 * Time the client spent held back: by its own limit windows, by the lock of their shared file, by
 * Retry-After and by backoff. Waits that overlap (several calls held by one full window) count
 * once, so the total never exceeds the run's own duration.
 */
export class WaitMeter {
  private active = 0;
  private since = 0;
  private doneMs = 0;

  /** Starts one wait; call the answer when it ends. */
  begin(): () => void {
    if (this.active === 0) this.since = performance.now();
    this.active += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.active -= 1;
      if (this.active === 0) this.doneMs += performance.now() - this.since;
    };
  }

  /** Milliseconds waited so far, a wait under way included. */
  get totalMs(): number {
    return Math.round(this.doneMs + (this.active ? performance.now() - this.since : 0));
  }
}
