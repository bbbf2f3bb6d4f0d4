/**
 * Metering of sessions: activity (for idleness), machine resource samples
 * (CPU, memory over time, disk) and the run time of per-call sandboxes,
 * each a compare-and-set update of the freshest record so that concurrent
 * calls never lose each other's charges. Samples after a call are taken off
 * the call's path: the call asks for one and returns; samples asked for
 * while one runs are folded into the next, and a session is sampled at most
 * once per `sampleIntervalMs` (a sample is a store commit and several host
 * reads: at an agent's call rate, one per call competed with the calls).
 * `drain` takes the deferred ones at once.
 */
import type { SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { SessionLocks } from './session-locks.js';
import type { SessionRecords } from './session-records.js';
import type { Clock } from './clock.js';

/** Collaborators of the meter. */
export interface UsageMeterDeps {
  records: SessionRecords;
  drivers: SandboxDrivers;
  disks: SessionDisks;
  locks: SessionLocks;
  clock: Clock;
  /** told about background samples that failed */
  onError?: (sessionId: string, error: unknown) => void;
  /** least time between two samples of one session asked for by calls; default 1 s */
  sampleIntervalMs?: number;
}

const DEFAULT_SAMPLE_INTERVAL_MS = 1_000;

/** Charges sessions for what they use. */
export class UsageMeter {
  private readonly sampling = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  /** samples put off until the session's interval has passed */
  private readonly deferred = new Map<string, NodeJS.Timeout>();
  /** when each session's last sample asked for by a call began (monotonic ms) */
  private readonly sampledAt = new Map<string, number>();
  // When a call on each machine last ended, kept in memory: only this process puts its machines to sleep.
  private readonly lastActive = new Map<string, number>();

  constructor(private readonly deps: UsageMeterDeps) {}

  /** Notes that work on the session's machine just ended (no write: the idle sleeper reads it). */
  markActive(sessionId: string): void {
    this.lastActive.set(sessionId, this.deps.clock.now().getTime());
  }

  /** When work on the session's machine last ended in this process, if it did. */
  lastActiveAt(sessionId: string): number | undefined {
    return this.lastActive.get(sessionId);
  }

  /** Records activity now, for the idle sleeper and metering. */
  async touch(sessionId: string): Promise<void> {
    const now = this.deps.clock.now().toISOString();
    await this.deps.records.update(sessionId, () => ({ lastActivityAt: now }));
  }

  /** Charges the run time of one per-call sandbox, and counts it as activity. */
  async chargePerCall(sessionId: string, durationMs: number): Promise<void> {
    const now = this.deps.clock.now().toISOString();
    await this.deps.records.update(sessionId, (fresh) => ({
      meters: { ...fresh.meters, perCallSeconds: (fresh.meters.perCallSeconds ?? 0) + durationMs / 1000 },
      lastActivityAt: now,
    }));
  }

  /** Asks for a sample of the session soon, off the caller's path (within the sample interval). */
  requestSample(sessionId: string): void {
    if (this.deferred.has(sessionId)) return;
    const interval = this.deps.sampleIntervalMs ?? DEFAULT_SAMPLE_INTERVAL_MS;
    const wait = (this.sampledAt.get(sessionId) ?? -Infinity) + interval - performance.now();
    if (wait > 0) {
      const timer = setTimeout(() => {
        this.deferred.delete(sessionId);
        this.sampleSoon(sessionId);
      }, wait);
      timer.unref();
      this.deferred.set(sessionId, timer);
      return;
    }
    this.sampleSoon(sessionId);
  }

  private sampleSoon(sessionId: string): void {
    const now = performance.now();
    // Only recent times matter: forget the rest before the map holds every session ever sampled.
    if (this.sampledAt.size >= 4096) {
      const interval = this.deps.sampleIntervalMs ?? DEFAULT_SAMPLE_INTERVAL_MS;
      for (const [id, at] of this.sampledAt) if (now - at >= interval) this.sampledAt.delete(id);
    }
    this.sampledAt.set(sessionId, now);
    if (this.sampling.has(sessionId)) {
      this.again.add(sessionId);
      return;
    }
    const run = (async () => {
      do {
        this.again.delete(sessionId);
        try {
          await this.sample(sessionId);
        } catch (error) {
          this.deps.onError?.(sessionId, error);
        }
      } while (this.again.has(sessionId));
    })().finally(() => this.sampling.delete(sessionId));
    this.sampling.set(sessionId, run);
  }

  /** Waits for the samples asked for so far (shutdown, tests). */
  async drain(): Promise<void> {
    for (const [sessionId, timer] of this.deferred) {
      clearTimeout(timer);
      this.deferred.delete(sessionId);
      this.sampleSoon(sessionId);
    }
    while (this.sampling.size > 0) await Promise.all([...this.sampling.values()]);
  }

  /**
   * Samples the machine's resource use into the session's meters: CPU (this
   * incarnation on top of the closed ones), peak memory, memory integrated over
   * time, and disk bytes. Taken after calls and before a suspend.
   */
  async sample(sessionId: string): Promise<void> {
    // Under the shared lock: a sample must not straddle a suspend, which closes the incarnation's CPU.
    await this.deps.locks.shared(sessionId, () => this.sampleLocked(sessionId));
  }

  /** `sample` for a caller that already holds the session's lock. */
  async sampleLocked(sessionId: string): Promise<void> {
    const { records, drivers, disks, clock } = this.deps;
    const session = await records.find(sessionId);
    if (!session || session.owner !== records.owner) return;
    const usage = session.sandbox
      ? await drivers
          .forHandle(session.sandbox)
          .usage(session.sandbox)
          .catch(() => undefined)
      : undefined;
    const disk = await disks.usage(sessionId).catch(() => undefined);
    const now = clock.now();
    if (!usage && !disk) return;
    await records.update(sessionId, (fresh) => {
      const meters = { ...fresh.meters };
      if (usage) {
        meters.cpuSeconds = Math.max(meters.cpuSeconds, meters.cpuSecondsClosed + usage.cpuSeconds);
        meters.peakMemoryBytes = Math.max(meters.peakMemoryBytes, usage.peakMemoryBytes);
        const since = meters.memorySampledAt ? Math.max(0, (now.getTime() - Date.parse(meters.memorySampledAt)) / 1000) : 0;
        meters.memoryByteSeconds += since * usage.memoryBytes;
        meters.memorySampledAt = now.toISOString();
      }
      if (disk) meters.diskBytes = disk.usedBytes;
      return { meters };
    });
  }
}
