/** Request counters of the control API (DESIGN.md section 6: `GET /_emulator/stats`). */
export class Stats {
  requests: Record<string, number> = {};
  update_requests = 0;
  rate_limited = 0;
  tokens_issued = 0;
  storage_downloads = 0;
  storage_bytes = 0;
  webhook_deliveries = 0;
  webhook_failures = 0;

  count(route: string): void {
    this.requests[route] = (this.requests[route] ?? 0) + 1;
  }

  reset(): void {
    this.requests = {};
    this.update_requests = 0;
    this.rate_limited = 0;
    this.tokens_issued = 0;
    this.storage_downloads = 0;
    this.storage_bytes = 0;
    this.webhook_deliveries = 0;
    this.webhook_failures = 0;
  }

  toJSON(): Record<string, unknown> {
    return {
      requests: { ...this.requests },
      update_requests: this.update_requests,
      rate_limited: this.rate_limited,
      tokens_issued: this.tokens_issued,
      storage_downloads: this.storage_downloads,
      storage_bytes: this.storage_bytes,
      webhook_deliveries: this.webhook_deliveries,
      webhook_failures: this.webhook_failures,
    };
  }
}
