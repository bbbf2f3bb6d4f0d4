/**
 * Per-session reader/writer locks. Tool calls share a session (parallel execs
 * are fine); lifecycle operations (suspend, resume, terminate, resize) are
 * exclusive, so a suspend never races an exec and a resume never happens twice.
 * Writers are preferred: once one waits, new readers queue behind it.
 */

interface LockState {
  readers: number;
  writer: boolean;
  queue: { exclusive: boolean; grant: () => void }[];
}

/** Reader/writer locks keyed by session id. */
export class SessionLocks {
  private readonly locks = new Map<string, LockState>();
  private readonly exclusiveWaiters: ((sessionId: string) => void)[] = [];
  private readonly exclusiveRequesters: ((sessionId: string) => void)[] = [];

  /**
   * Calls `listener` whenever an exclusive holder has to wait for shared ones:
   * holders that would otherwise keep the lock indefinitely (a live view of
   * the desktop) let go of it then.
   */
  whenExclusiveWaits(listener: (sessionId: string) => void): void {
    this.exclusiveWaiters.push(listener);
  }

  /**
   * Calls `listener` whenever an exclusive holder asks for the lock, before
   * it has it: what keeps a stream into the machine between calls (which
   * would stop a checkpoint) closes it then.
   */
  whenExclusiveRequested(listener: (sessionId: string) => void): void {
    this.exclusiveRequesters.push(listener);
  }

  /** True while an exclusive holder has the session's lock or waits for it. */
  exclusiveWanted(sessionId: string): boolean {
    const state = this.locks.get(sessionId);
    return state !== undefined && (state.writer || state.queue.some((waiting) => waiting.exclusive));
  }

  /** Runs `work` while holding the session's shared lock. */
  async shared<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    await this.acquire(sessionId, false);
    try {
      return await work();
    } finally {
      this.release(sessionId, false);
    }
  }

  /** Runs `work` while holding the session's exclusive lock. */
  async exclusive<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    await this.acquire(sessionId, true);
    try {
      return await work();
    } finally {
      this.release(sessionId, true);
    }
  }

  /** Number of shared holders (tool calls in flight) of a session. */
  inFlight(sessionId: string): number {
    return this.locks.get(sessionId)?.readers ?? 0;
  }

  /** True when nothing holds or waits for the session's lock. */
  isIdle(sessionId: string): boolean {
    const state = this.locks.get(sessionId);
    return !state || (state.readers === 0 && !state.writer && state.queue.length === 0);
  }

  private state(sessionId: string): LockState {
    let state = this.locks.get(sessionId);
    if (!state) {
      state = { readers: 0, writer: false, queue: [] };
      this.locks.set(sessionId, state);
    }
    return state;
  }

  private acquire(sessionId: string, exclusive: boolean): Promise<void> {
    if (exclusive) for (const listener of this.exclusiveRequesters) listener(sessionId);
    const state = this.state(sessionId);
    const free = exclusive ? !state.writer && state.readers === 0 : !state.writer && state.queue.length === 0;
    if (free && state.queue.length === 0) {
      if (exclusive) state.writer = true;
      else state.readers += 1;
      return Promise.resolve();
    }
    const waiting = new Promise<void>((resolve) => state.queue.push({ exclusive, grant: resolve }));
    if (exclusive && state.readers > 0) for (const listener of this.exclusiveWaiters) listener(sessionId);
    return waiting;
  }

  private release(sessionId: string, exclusive: boolean): void {
    const state = this.state(sessionId);
    if (exclusive) state.writer = false;
    else state.readers -= 1;
    while (state.queue.length > 0 && !state.writer) {
      const next = state.queue[0];
      if (!next) break;
      if (next.exclusive) {
        if (state.readers > 0) break;
        state.queue.shift();
        state.writer = true;
        next.grant();
        break;
      }
      state.queue.shift();
      state.readers += 1;
      next.grant();
    }
    if (state.readers === 0 && !state.writer && state.queue.length === 0) this.locks.delete(sessionId);
  }
}
