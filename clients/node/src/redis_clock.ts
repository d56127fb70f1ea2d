/**
 * The producer's estimate of Redis's clock, as the Go producer keeps it
 * (queue/redis_clock.go): the lone enqueue scripts take it as "now" so
 * that they need not call TIME themselves.
 */

/**
 * How long (ms) one reading of Redis's TIME serves as the base of the
 * estimate. The local clock drifts from Redis's by parts per million, so
 * the estimate stays within a round trip and some µs of Redis's clock; it
 * is a hint, and the scripts keep positions strictly increasing whatever
 * it says.
 */
export const REDIS_CLOCK_TTL_MS = 5000;

/** The part of an ioredis client the clock uses: TIME, as [seconds, µs]. */
export interface TimeReader {
  time(): Promise<unknown>;
}

/** A monotonic local clock in milliseconds (fractions allowed): performance.now by default. */
export type Monotonic = () => number;

/**
 * Redis's clock (TIME, µs since the epoch) estimated from the last reading
 * and the local monotonic clock's time since. Safe for concurrent async
 * callers: at most one TIME is in flight at a time; while it is, the others
 * use the older reading, or none.
 */
export class RedisClock {
  private reading: { atMs: number; us: number } | null = null;
  private busy = false; // a caller is reading TIME

  constructor(private readonly monotonic: Monotonic = () => performance.now()) {}

  /**
   * The estimate in µs, reading TIME first (one round trip) when there is
   * no reading or the last is REDIS_CLOCK_TTL_MS old. Resolves 0, "no
   * estimate" (the script then reads TIME itself), when there is no usable
   * reading: none yet while another caller reads, or TIME failed. Never
   * rejects.
   */
  async now(r: TimeReader): Promise<number> {
    const last = this.reading;
    let ageMs = 0;
    if (last) {
      ageMs = this.monotonic() - last.atMs;
      if (ageMs < REDIS_CLOCK_TTL_MS) return estimate(last.us, ageMs);
    }
    if (this.busy) return last ? estimate(last.us, ageMs) : 0; // being read again: still close
    this.busy = true;
    try {
      const t = await r.time();
      // Redis read its clock somewhere between sent and received: taking
      // received as the reading's local time keeps the estimate from
      // running ahead of Redis's clock (it lags by up to the round trip),
      // as the Go producer does.
      const received = this.monotonic();
      const us = timeMicros(t);
      if (us === 0) return 0;
      this.reading = { atMs: received, us };
      return us;
    } catch {
      return 0;
    } finally {
      this.busy = false;
    }
  }
}

/** The reading plus the whole µs elapsed since it (a monotonic clock never goes back). */
function estimate(us: number, ageMs: number): number {
  return us + Math.max(0, Math.floor(ageMs * 1000));
}

/** TIME's reply, [seconds, µs] as strings, in µs; 0 when it is not one. */
function timeMicros(t: unknown): number {
  if (!Array.isArray(t) || t.length !== 2) return 0;
  const [s, us] = t.map((v) => (typeof v === "string" && /^\d+$/.test(v) ? Number(v) : NaN));
  const v = s! * 1_000_000 + us!;
  return Number.isSafeInteger(v) && v > 0 ? v : 0;
}

/** The estimate as the scripts take it: decimal digits ("0" for none). */
export function clockArg(us: number): string {
  return Number.isSafeInteger(us) && us > 0 ? String(us) : "0";
}
