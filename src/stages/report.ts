/**
 * Every run ends with a report: each item's outcome and why (DESIGN.md section 2). Outcomes are
 * the same for every pipeline; `converted` is an import's `ok` after normalisation.
 */
export const OUTCOMES = ['ok', 'converted', 'skipped', 'invalid', 'conflict', 'failed', 'unknown'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface ItemReport {
  /** The item's identity (for exports, the manifest key). */
  key: string;
  code: string;
  file_name: string;
  outcome: Outcome;
  reason?: string;
  /** Where the file is (exports) or came from (imports). */
  path?: string;
  size?: number;
  sha256?: string;
}

export class RunReport {
  readonly items: ItemReport[] = [];
  readonly counts: Record<Outcome, number> = { ok: 0, converted: 0, skipped: 0, invalid: 0, conflict: 0, failed: 0, unknown: 0 };
  readonly startedAt = Date.now();
  finishedAt = 0;
  bytes = 0;
  notes: string[] = [];
  /**
   * Set when the run was stopped by a signal before it had done everything: the items it did not
   * reach are not in `items`, and `total` is how many there were in all (when known).
   */
  interrupted: { signal: 'SIGINT' | 'SIGTERM'; total?: number } | null = null;

  constructor(readonly command: string) {}

  add(item: ItemReport): void {
    this.items.push(item);
    this.counts[item.outcome] += 1;
    if (item.outcome === 'ok' || item.outcome === 'converted') this.bytes += item.size ?? 0;
  }

  finish(): void {
    this.finishedAt = Date.now();
  }

  /** Items that did not go through: invalid, conflicting, failed or of unknown fate (exit code 3). */
  get problems(): number {
    return this.counts.invalid + this.counts.conflict + this.counts.failed + this.counts.unknown;
  }

  summary(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      command: this.command,
      duration_ms: (this.finishedAt || Date.now()) - this.startedAt,
      counts: { ...this.counts },
      bytes: this.bytes,
      ...(this.interrupted ? { interrupted: this.interrupted } : {}),
      ...extra,
      notes: this.notes,
    };
  }

  toJSON(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { ...this.summary(extra), items: this.items };
  }
}
