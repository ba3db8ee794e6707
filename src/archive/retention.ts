/**
 * Which snapshots a retention policy keeps, as restic's `forget` decides: going from the newest
 * complete snapshot back, each `keep_*` rule keeps the newest snapshot of each of its last N
 * periods (days, ISO weeks, months, years; `keep_last` each snapshot) that hold one. Periods are
 * those of the snapshot ids, UTC. Only complete snapshots count; the newest complete one is always
 * kept; incomplete ones older than it are superseded and go, newer ones stay.
 */
import { z } from 'zod';
import { parseSnapshotId } from './store.js';

const count = z.number().int('must be a whole number').min(0, 'must be 0 or more');

/** A retention policy: how many of each kind of snapshot to keep; a rule left out or 0 keeps none by itself. */
export const retentionPolicySchema = z.strictObject({
  keep_last: count.optional(),
  keep_daily: count.optional(),
  keep_weekly: count.optional(),
  keep_monthly: count.optional(),
  keep_yearly: count.optional(),
});
export type RetentionPolicy = z.infer<typeof retentionPolicySchema>;

export type RetentionRule = keyof RetentionPolicy;

/** A snapshot as retention sees it. */
export interface RetainedSnapshot {
  id: string;
  /** When it was taken (its id's time). */
  time: Date;
  complete: boolean;
  /** Complete, but held back by its run (too many deletions): counted as an incomplete one. */
  held?: boolean;
}

export interface RetentionDecision {
  /** Kept snapshots, newest first, each with the rules (or reasons) that keep it. */
  keep: { id: string; reasons: string[] }[];
  /** Snapshots to remove, newest first, each with why. */
  remove: { id: string; reason: string }[];
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** The ISO 8601 week of a UTC date, as `YYYY-Www` (the week's year may differ from the date's). */
export function isoWeek(time: Date): string {
  const day = new Date(Date.UTC(time.getUTCFullYear(), time.getUTCMonth(), time.getUTCDate()));
  const weekday = day.getUTCDay() || 7;
  day.setUTCDate(day.getUTCDate() + 4 - weekday); // the Thursday of its week names the week's year
  const yearStart = Date.UTC(day.getUTCFullYear(), 0, 1);
  const week = Math.ceil(((day.getTime() - yearStart) / 86_400_000 + 1) / 7);
  return `${day.getUTCFullYear()}-W${pad(week)}`;
}

const PERIODS: Record<Exclude<RetentionRule, 'keep_last'>, (t: Date) => string> = {
  keep_daily: (t) => t.toISOString().slice(0, 10),
  keep_weekly: isoWeek,
  keep_monthly: (t) => t.toISOString().slice(0, 7),
  keep_yearly: (t) => t.toISOString().slice(0, 4),
};

const RULES: RetentionRule[] = ['keep_last', 'keep_daily', 'keep_weekly', 'keep_monthly', 'keep_yearly'];

/** Whether the policy keeps anything by itself; an empty policy removes nothing. */
export const hasRules = (policy: RetentionPolicy): boolean => RULES.some((rule) => (policy[rule] ?? 0) > 0);

/** A snapshot's same-second number: `2026-12-03T052055-2` is the second one of its second (1 for none). */
const sameSecond = (id: string): number => parseSnapshotId(id)?.n ?? 1;

/** What `policy` keeps of `snapshots` (any order). An empty policy keeps everything. */
export function applyRetention(snapshots: RetainedSnapshot[], policy: RetentionPolicy): RetentionDecision {
  const newestFirst = [...snapshots].sort((a, b) => b.time.getTime() - a.time.getTime() || sameSecond(b.id) - sameSecond(a.id) || (a.id < b.id ? 1 : -1));
  if (!hasRules(policy)) return { keep: newestFirst.map((s) => ({ id: s.id, reasons: ['no retention rule given'] })), remove: [] };
  const newestComplete = newestFirst.find((s) => s.complete);
  // Newer by place in the order, not by time: ids name the second, and two runs can start in one.
  const newestCompleteAt = newestComplete ? newestFirst.indexOf(newestComplete) : newestFirst.length;
  const left = new Map(RULES.map((rule) => [rule, policy[rule] ?? 0]));
  const lastPeriod = new Map<RetentionRule, string>();
  const decision: RetentionDecision = { keep: [], remove: [] };
  for (const [at, snapshot] of newestFirst.entries()) {
    if (!snapshot.complete) {
      const what = snapshot.held ? 'held back' : 'incomplete';
      if (!newestComplete || at < newestCompleteAt) decision.keep.push({ id: snapshot.id, reasons: [`${what}, newer than the newest complete snapshot`] });
      else decision.remove.push({ id: snapshot.id, reason: `${what}, superseded by ${newestComplete.id}` });
      continue;
    }
    const reasons: string[] = [];
    for (const rule of RULES) {
      if (left.get(rule)! <= 0) continue;
      const period = rule === 'keep_last' ? snapshot.id : PERIODS[rule](snapshot.time);
      if (period === lastPeriod.get(rule)) continue;
      lastPeriod.set(rule, period);
      left.set(rule, left.get(rule)! - 1);
      reasons.push(rule === 'keep_last' ? 'last' : `${rule.slice(5)} ${period}`);
    }
    if (snapshot === newestComplete && reasons.length === 0) reasons.push('the newest complete snapshot');
    if (reasons.length > 0) decision.keep.push({ id: snapshot.id, reasons });
    else decision.remove.push({ id: snapshot.id, reason: 'kept by no rule' });
  }
  return decision;
}
