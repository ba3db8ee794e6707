/**
 * The service clock. The emulator's time is its own: tests and benchmarks jump it or speed it up,
 * and URL expiry, limit windows, token lifetime, task progress and the maintenance window all
 * follow it (DESIGN.md section 6). Times are epoch milliseconds; `format` writes them in service
 * local time (`YYYY-MM-DD HH:MM:SS`, Japan time unless another IANA zone is given).
 */
export interface ClockOptions {
  /** Service time at start, epoch ms. Default: the real time. */
  start?: number;
  /** Service seconds per real second. Default 1. */
  speed?: number;
  /** IANA time zone of the service's local time. Default `Asia/Tokyo`. */
  timeZone?: string;
}

export class Clock {
  private baseService: number;
  private baseReal: number;
  private speedValue: number;
  readonly timeZone: string;
  private readonly parts: Intl.DateTimeFormat;

  constructor(options: ClockOptions = {}) {
    this.baseReal = Date.now();
    this.baseService = options.start ?? this.baseReal;
    this.speedValue = options.speed ?? 1;
    if (!(this.speedValue > 0) || !Number.isFinite(this.speedValue)) {
      throw new Error(`clock speed must be a positive number, got ${String(options.speed)}`);
    }
    this.timeZone = options.timeZone ?? 'Asia/Tokyo';
    this.parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: this.timeZone,
      year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
    });
  }

  /** Service time now, epoch ms. */
  now(): number {
    return this.baseService + (Date.now() - this.baseReal) * this.speedValue;
  }

  get speed(): number {
    return this.speedValue;
  }

  setSpeed(speed: number): void {
    if (!(speed > 0) || !Number.isFinite(speed)) throw new Error(`speed must be a positive number, got ${speed}`);
    this.rebase();
    this.speedValue = speed;
  }

  advance(seconds: number): void {
    if (!Number.isFinite(seconds) || seconds < 0) throw new Error(`advance_seconds must be a number >= 0, got ${seconds}`);
    this.rebase();
    this.baseService += seconds * 1000;
  }

  /** Sets service time (epoch ms) without changing speed. */
  set(serviceMs: number): void {
    this.baseReal = Date.now();
    this.baseService = serviceMs;
  }

  /** Real milliseconds until the service clock reaches `serviceMs` (0 when already past). */
  realDelayUntil(serviceMs: number): number {
    return Math.max(0, (serviceMs - this.now()) / this.speedValue);
  }

  private rebase(): void {
    const now = this.now();
    this.baseReal = Date.now();
    this.baseService = now;
  }

  /** `YYYY-MM-DD HH:MM:SS` in service local time. */
  format(ms: number = this.now()): string {
    const p = this.localParts(ms);
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
  }

  /** `YYYY-MM-DD` in service local time. */
  formatDate(ms: number = this.now()): string {
    return this.format(ms).slice(0, 10);
  }

  /** Minutes after local midnight. */
  minuteOfDay(ms: number = this.now()): number {
    const p = this.localParts(ms);
    return Number(p.hour) * 60 + Number(p.minute);
  }

  /**
   * Epoch ms of a local `YYYY-MM-DD HH:MM:SS` (or a date, taken at 00:00:00). The zone offset is
   * found by formatting a guess and correcting by the difference, which is exact away from DST
   * changes and within an hour across them.
   */
  parse(local: string): number {
    const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2}))?$/.exec(local);
    if (!m) throw new Error(`not a service timestamp: ${local}`);
    const asUtc = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +(m[4] ?? 0), +(m[5] ?? 0), +(m[6] ?? 0));
    const offset = this.offsetMs(asUtc);
    const guess = asUtc - offset;
    return asUtc - this.offsetMs(guess);
  }

  private offsetMs(ms: number): number {
    const p = this.localParts(ms);
    const local = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second);
    return local - Math.floor(ms / 1000) * 1000;
  }

  private localParts(ms: number): Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', string> {
    const out = { year: '', month: '', day: '', hour: '', minute: '', second: '' };
    for (const part of this.parts.formatToParts(new Date(ms))) {
      if (part.type in out) out[part.type as keyof typeof out] = part.value;
    }
    return out;
  }
}
