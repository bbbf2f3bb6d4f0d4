/**
 * Background work while something it depends on is down (the store, the
 * bucket, a collector): it backs off instead of hammering, and the outage is
 * reported once when it starts and once when it ends, not at every tick.
 */
import { isAirlockError, type ErrorCode } from './errors.js';

/** Codes that mean "a dependency does not answer now", as opposed to a fault of the work itself. */
const OUTAGE_CODES: readonly ErrorCode[] = ['STORE_UNAVAILABLE', 'OBJECT_STORAGE_UNAVAILABLE'];

/** The dependency an error says is down, or undefined when the error is something else. */
export function outageOf(error: unknown): ErrorCode | undefined {
  return OUTAGE_CODES.find((code) => isAirlockError(error, code));
}

/** Pacing of a loop whose work fails: waits double from `firstMs` up to `maxMs`; a success resets them. */
export class Backoff {
  private failures = 0;
  private until = 0;

  constructor(
    private readonly firstMs = 1000,
    private readonly maxMs = 10_000,
  ) {}

  /** True while the loop should skip its work. */
  waiting(nowMs: number): boolean {
    return nowMs < this.until;
  }

  failed(nowMs: number): void {
    this.failures += 1;
    this.until = nowMs + Math.min(this.maxMs, this.firstMs * 2 ** Math.min(this.failures - 1, 20));
  }

  succeeded(): void {
    this.failures = 0;
    this.until = 0;
  }
}

/** How an outage is told: once when it starts, once when it ends. */
export interface OutageSink {
  down(code: ErrorCode, what: string, error: unknown): void;
  up(code: ErrorCode, downForMs: number): void;
}

/**
 * Tells each outage once. `report` takes every failure of background work:
 * an outage starts the first time one says a dependency is down (later ones
 * are quiet); `recovered` ends it when that dependency answered again.
 * Other failures go to `other`, every time.
 */
export class OutageReports {
  private readonly since = new Map<ErrorCode, number>();

  constructor(
    private readonly sink: OutageSink,
    private readonly other: (what: string, error: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  report(what: string, error: unknown): void {
    const code = outageOf(error);
    if (!code) {
      this.other(what, error);
      return;
    }
    if (this.since.has(code)) return;
    this.since.set(code, this.now());
    this.sink.down(code, what, error);
  }

  /** True while an outage of `code` is going on. */
  isDown(code: ErrorCode): boolean {
    return this.since.has(code);
  }

  recovered(code: ErrorCode): void {
    const since = this.since.get(code);
    if (since === undefined) return;
    this.since.delete(code);
    this.sink.up(code, this.now() - since);
  }
}
