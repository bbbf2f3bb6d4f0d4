/**
 * Metering of sessions: activity (for idleness), machine resource samples
 * (CPU, memory over time, disk) and the run time of per-call sandboxes,
 * each written in one transaction on the freshest record so that concurrent
 * calls never lose each other's charges.
 */
import type { SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { SessionLocks } from './session-locks.js';
import type { SessionRecord } from './session.js';
import type { Store } from './store.js';
import type { Clock } from './clock.js';

/** Collaborators of the meter. */
export interface UsageMeterDeps {
  store: Store;
  drivers: SandboxDrivers;
  disks: SessionDisks;
  locks: SessionLocks;
  clock: Clock;
}

/** Charges sessions for what they use. */
export class UsageMeter {
  constructor(private readonly deps: UsageMeterDeps) {}

  /** Records activity now, for the idle sleeper and metering. */
  touch(sessionId: string): void {
    this.update(sessionId, (session) => {
      session.lastActivityAt = this.deps.clock.now().toISOString();
    });
  }

  /** Charges the run time of one per-call sandbox, and counts it as activity. */
  chargePerCall(sessionId: string, durationMs: number): void {
    this.update(sessionId, (session) => {
      session.meters.perCallSeconds = (session.meters.perCallSeconds ?? 0) + durationMs / 1000;
      session.lastActivityAt = this.deps.clock.now().toISOString();
    });
  }

  /**
   * Samples the machine's resource use into the session's meters: CPU (this
   * incarnation on top of the closed ones), peak memory, memory integrated over
   * time, and disk bytes. Called after every tool call and before a suspend.
   */
  async sample(sessionId: string): Promise<void> {
    // Under the shared lock: a sample must not straddle a suspend, which closes the incarnation's CPU.
    await this.deps.locks.shared(sessionId, () => this.sampleLocked(sessionId));
  }

  /** `sample` for a caller that already holds the session's lock. */
  async sampleLocked(sessionId: string): Promise<void> {
    const { store, drivers, disks, clock } = this.deps;
    const session = store.getSession(sessionId);
    if (!session) return;
    const usage = session.sandbox ? await drivers.forHandle(session.sandbox).usage(session.sandbox).catch(() => undefined) : undefined;
    const disk = await disks.usage(sessionId).catch(() => undefined);
    const now = clock.now();
    this.update(sessionId, (fresh) => {
      const meters = fresh.meters;
      if (usage) {
        meters.cpuSeconds = Math.max(meters.cpuSeconds, meters.cpuSecondsClosed + usage.cpuSeconds);
        meters.peakMemoryBytes = Math.max(meters.peakMemoryBytes, usage.peakMemoryBytes);
        const since = meters.memorySampledAt ? Math.max(0, (now.getTime() - Date.parse(meters.memorySampledAt)) / 1000) : 0;
        meters.memoryByteSeconds += since * usage.memoryBytes;
        meters.memorySampledAt = now.toISOString();
      }
      if (disk) meters.diskBytes = disk.usedBytes;
    });
  }

  private update(sessionId: string, change: (session: SessionRecord) => void): void {
    const { store } = this.deps;
    store.transaction(() => {
      const fresh = store.getSession(sessionId);
      if (!fresh) return;
      change(fresh);
      store.updateSession(fresh);
    });
  }
}
