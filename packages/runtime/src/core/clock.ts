/** Time source of the core, replaceable in tests. */
export interface Clock {
  now(): Date;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/** Seconds between two ISO timestamps (never negative). */
export function secondsBetween(fromIso: string, to: Date): number {
  return Math.max(0, (to.getTime() - Date.parse(fromIso)) / 1000);
}
