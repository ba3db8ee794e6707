/**
 * Fault injection (DESIGN.md section 6), one set for the API and one for storage. Rates are drawn
 * from a seeded generator, so a run with the same seed fails the same requests.
 *
 * On the API, a 500 or 503 is answered before the request is handled; a 504, a reset and a
 * truncated body happen after it was handled, as when a gateway gives up on a request the service
 * went on to execute: the client cannot know whether an update took effect. A fault is drawn only
 * for a request that passed the service's own refusals (maintenance, token, limits), so one
 * limited by `max_faults` is never spent on a request that would have been refused anyway.
 */
import { z } from 'zod';

export const faultSetSchema = z.strictObject({
  latency_ms: z.number().min(0).optional(),
  bandwidth_bytes_per_s: z.number().min(0).optional(),
  error_rate: z.number().min(0).max(1).optional(),
  /** Statuses drawn for `error_rate`; default 500, 503, 504. */
  error_statuses: z.array(z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504), z.literal(429)])).min(1).optional(),
  reset_rate: z.number().min(0).max(1).optional(),
  truncate_rate: z.number().min(0).max(1).optional(),
  /**
   * Connection cut while the request's body is still arriving, before the service read it whole:
   * the request did nothing, as when a gateway dies mid-upload (API only).
   */
  upload_reset_rate: z.number().min(0).max(1).optional(),
  /**
   * The update task a request creates ends ERROR when it runs, having changed nothing, as when the
   * service fails unexpectedly (v2 and the legacy interface alike).
   */
  task_error_rate: z.number().min(0).max(1).optional(),
  /** Only requests whose path contains this string are affected. */
  path_contains: z.string().optional(),
  /** Only requests of this method are affected. */
  method: z.string().optional(),
  /** At most this many faults (errors, resets, truncations, failed tasks) are injected, then the set is spent. */
  max_faults: z.number().int().min(0).optional(),
  seed: z.number().int().optional(),
});
export type FaultSet = z.infer<typeof faultSetSchema>;

export const faultsBodySchema = z.strictObject({
  api: faultSetSchema.optional(),
  storage: faultSetSchema.optional(),
});

export type FaultDecision =
  | { kind: 'none' }
  | { kind: 'error'; status: number }
  | { kind: 'reset' }
  | { kind: 'truncate' }
  | { kind: 'upload-reset' };

/** A small seeded generator (mulberry32): same seed, same sequence. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Faults {
  private set: FaultSet = {};
  private random: () => number = Math.random;
  private injected = 0;

  configure(set: FaultSet | undefined): void {
    if (!set) return;
    // A value of 0 switches that fault off; fields not given keep their value.
    this.set = { ...this.set, ...set };
    this.random = seeded(this.set.seed ?? Math.floor(Math.random() * 2 ** 31));
    this.injected = 0;
  }

  clear(): void {
    this.set = {};
    this.injected = 0;
  }

  get current(): FaultSet {
    return { ...this.set };
  }

  private applies(method: string, path: string): boolean {
    if (this.set.path_contains && !path.includes(this.set.path_contains)) return false;
    if (this.set.method && this.set.method.toUpperCase() !== method) return false;
    return true;
  }

  latencyMs(method: string, path: string): number {
    return this.applies(method, path) ? (this.set.latency_ms ?? 0) : 0;
  }

  bandwidth(method: string, path: string): number {
    return this.applies(method, path) ? (this.set.bandwidth_bytes_per_s ?? 0) : 0;
  }

  /** Whether the update task a request creates is to end ERROR; drawn when the task is created. */
  failsTask(method: string, path: string): boolean {
    if (!this.applies(method, path) || !this.set.task_error_rate) return false;
    if (this.set.max_faults !== undefined && this.injected >= this.set.max_faults) return false;
    if (this.random() >= this.set.task_error_rate) return false;
    this.injected += 1;
    return true;
  }

  decide(method: string, path: string): FaultDecision {
    if (!this.applies(method, path)) return { kind: 'none' };
    if (this.set.max_faults !== undefined && this.injected >= this.set.max_faults) return { kind: 'none' };
    const roll = (rate: number | undefined): boolean => !!rate && this.random() < rate;
    let decision: FaultDecision = { kind: 'none' };
    if (roll(this.set.error_rate)) {
      const statuses = this.set.error_statuses ?? [500, 503, 504];
      decision = { kind: 'error', status: statuses[Math.floor(this.random() * statuses.length)]! };
    } else if (roll(this.set.reset_rate)) {
      decision = { kind: 'reset' };
    } else if (roll(this.set.truncate_rate)) {
      decision = { kind: 'truncate' };
    } else if (roll(this.set.upload_reset_rate)) {
      decision = { kind: 'upload-reset' };
    }
    if (decision.kind !== 'none') this.injected += 1;
    return decision;
  }
}
