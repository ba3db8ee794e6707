/**
 * A small seeded pseudo-random generator (mulberry32), so that generated companies and sample
 * files are the same on every run for the same seed.
 */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(list: readonly T[]): T {
    if (!list.length) throw new Error('pick from an empty list');
    return list[Math.floor(this.next() * list.length)]!;
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** A date `YYYY-MM-DD` between two years, both included. */
  date(fromYear: number, toYear: number): string {
    const start = Date.UTC(fromYear, 0, 1);
    const end = Date.UTC(toYear, 11, 31);
    const day = new Date(start + Math.floor(this.next() * ((end - start) / 86_400_000 + 1)) * 86_400_000);
    return day.toISOString().slice(0, 10);
  }
}

/** A 32-bit seed from text (FNV-1a), to derive independent streams from one seed. */
export function seedOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
