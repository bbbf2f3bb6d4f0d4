/**
 * Puts idle session machines to sleep, in two depths: **paused** (frozen in
 * place, memory kept, wakes in tens of milliseconds) after
 * `idle.pauseAfterSeconds`, and **suspended** (checkpointed to a memory image,
 * nothing held on the host) after `idle.suspendAfterSeconds`. The next call
 * wakes the machine through `SessionService.withMachine`, and the caller sees
 * the wake-up in its timing's `resumeMs`.
 *
 * A machine sleeps only when no call holds or waits for its lock, and the
 * check is repeated under the exclusive lock (`sleepIfIdle`), so a call that
 * arrives in between cancels the sleep instead of being lost. Opt-outs: the
 * contract's `idle.keepAwake`, or `airlock sessions keep-awake ID` at run time.
 */
import { AirlockError } from './errors.js';
import { systemClock, type Clock } from './clock.js';
import { Backoff } from './outage-reports.js';
import type { SessionService } from './session-service.js';
import type { DriverCapabilities } from './sandbox-driver.js';
import type { ContractIdle } from './session-contract.js';
import type { SessionRecord } from './session.js';

/** Fraction of the suspend timeout after which an idle machine is paused, when the contract names no pause timeout. */
export const DEFAULT_PAUSE_FRACTION = 0.25;
/** Suspend timeout of a contract that has none (the contract schema's default). */
export const DEFAULT_SUSPEND_AFTER_SECONDS = 300;
/** After a failed sleep, how long the sleeper leaves the session alone. */
const RETRY_AFTER_MS = 30_000;

/** When a session's machine pauses and suspends, from its contract and its run-time override. */
export interface IdlePolicy {
  pauseAfterSeconds: number;
  suspendAfterSeconds: number;
  keepAwake: boolean;
}

/** Options of the sleeper. */
export interface IdleSleeperOptions {
  /** how often idleness is checked; default 1000 ms */
  tickMs?: number;
  clock?: Clock;
  /** told about sleeps that failed (the server logs them) */
  onError?: (sessionId: string, error: unknown) => void;
  /** told about a pass that failed (the store does not answer): the next ones back off, up to 10 s apart */
  onTickError?: (error: unknown) => void;
  /** told about every transition it made, for logs and tests */
  onSleep?: (sessionId: string, state: 'paused' | 'suspended') => void;
}

/** The idle policy of a session (contract defaults applied; stored contracts may predate some keys). */
export function idlePolicyOf(session: Pick<SessionRecord, 'contract' | 'keepAwake'>): IdlePolicy {
  // contracts stored before some keys existed lack them
  const idle: Partial<ContractIdle> = session.contract.idle ?? {};
  const suspendAfterSeconds = idle.suspendAfterSeconds ?? DEFAULT_SUSPEND_AFTER_SECONDS;
  return {
    suspendAfterSeconds,
    pauseAfterSeconds: Math.min(idle.pauseAfterSeconds ?? suspendAfterSeconds * DEFAULT_PAUSE_FRACTION, suspendAfterSeconds),
    keepAwake: session.keepAwake ?? idle.keepAwake ?? false,
  };
}

/** Where an idle session should be now, or undefined to leave it as it is. */
export function sleepDepthFor(
  session: SessionRecord,
  now: Date,
  lastActiveMs = 0,
  capabilities: Pick<DriverCapabilities, 'pause' | 'snapshot'> = { pause: true, snapshot: true },
): 'paused' | 'suspended' | undefined {
  if (session.mode !== 'machine' || session.pendingOperation) return undefined;
  if (session.state !== 'running' && session.state !== 'paused') return undefined;
  const policy = idlePolicyOf(session);
  if (policy.keepAwake) return undefined;
  // A machine woken by hand (resume, unpause) counts as active from then on.
  const active = Math.max(Date.parse(session.lastActivityAt), lastActiveMs);
  const since = session.state === 'running' ? Math.max(active, Date.parse(session.stateSince)) : active;
  const idleSeconds = (now.getTime() - since) / 1000;
  const canPause = capabilities.pause && session.state === 'running';
  if (idleSeconds >= policy.suspendAfterSeconds) return capabilities.snapshot ? 'suspended' : canPause ? 'paused' : undefined;
  if (canPause && idleSeconds >= policy.pauseAfterSeconds) return 'paused';
  return undefined;
}

/** The background task that puts idle machines to sleep. */
export class IdleSleeper {
  private readonly tickMs: number;
  private readonly clock: Clock;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private readonly inFlight = new Set<string>();
  private readonly retryAt = new Map<string, number>();
  private stopped = false;
  private readonly backoff = new Backoff();

  constructor(
    private readonly sessions: SessionService,
    private readonly options: IdleSleeperOptions = {},
  ) {
    this.tickMs = options.tickMs ?? 1000;
    this.clock = options.clock ?? systemClock;
  }

  /** Starts ticking; the timer never keeps the process alive on its own. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      if (this.ticking || this.backoff.waiting(this.clock.now().getTime())) return;
      // A pass that fails (the store is down) is told, and the next waits: it must never reject into the process.
      this.ticking = this.tick()
        .then(
          () => this.backoff.succeeded(),
          (error: unknown) => {
            this.backoff.failed(this.clock.now().getTime());
            this.options.onTickError?.(error);
          },
        )
        .finally(() => (this.ticking = undefined));
    }, this.tickMs);
    this.timer.unref();
  }

  /** Stops ticking and waits for the sleeps in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  /** One pass over the sessions: every idle machine goes to the depth its idle time calls for (concurrently). */
  async tick(): Promise<void> {
    const now = this.clock.now();
    const work: Promise<void>[] = [];
    for (const session of await this.sessions.records.list({ states: ['running', 'paused'], owner: this.sessions.owner })) {
      if (this.inFlight.has(session.id) || (this.retryAt.get(session.id) ?? 0) > now.getTime()) continue;
      if (!this.sessions.locks.isIdle(session.id)) continue;
      const depth = sleepDepthFor(session, now, this.sessions.usage.lastActiveAt(session.id), this.sessions.driverOf(session).capabilities);
      if (depth) work.push(this.sleep(session.id, depth));
    }
    await Promise.all(work);
  }

  private async sleep(sessionId: string, depth: 'paused' | 'suspended'): Promise<void> {
    this.inFlight.add(sessionId);
    try {
      // Asked again under the exclusive lock: a call may have come and gone since the check above.
      const slept = await this.sessions.sleepIfIdle(sessionId, depth, (fresh) => this.depthReached(fresh, depth));
      if (slept) {
        this.retryAt.delete(sessionId);
        this.options.onSleep?.(sessionId, depth);
      }
    } catch (error) {
      this.retryAt.set(sessionId, this.clock.now().getTime() + RETRY_AFTER_MS);
      this.options.onError?.(sessionId, error);
    } finally {
      this.inFlight.delete(sessionId);
    }
  }

  private depthReached(session: SessionRecord, depth: 'paused' | 'suspended'): boolean {
    const now = sleepDepthFor(session, this.clock.now(), this.sessions.usage.lastActiveAt(session.id), this.sessions.driverOf(session).capabilities);
    return now === depth || (depth === 'paused' && now === 'suspended');
  }
}

/**
 * Sets or clears a session's run-time keep-awake flag (audited); it overrides
 * the contract's `idle.keepAwake`. Turning it on also wakes a sleeping
 * machine: whoever asks for it wants the machine up now.
 */
export async function setKeepAwake(sessions: SessionService, sessionId: string, keepAwake: boolean): Promise<SessionRecord> {
  const session = await sessions.getOwned(sessionId);
  if (session.mode !== 'machine') {
    throw new AirlockError('INVALID_STATE', `session ${sessionId} runs each call in a fresh sandbox; it has no machine to keep awake`, {
      details: { sessionId, mode: session.mode },
    });
  }
  if (session.state === 'terminated' || session.state === 'failed') {
    throw new AirlockError('INVALID_STATE', `session ${sessionId} is ${session.state}; keep-awake applies to live sessions only`, {
      details: { sessionId, state: session.state },
    });
  }
  const changed = await sessions.records.update(sessionId, () => ({ keepAwake }), { type: 'session.keep-awake-changed', data: { keepAwake } });
  if (!keepAwake || changed.state === 'running') return changed;
  await sessions.withMachine(sessionId, async () => undefined, { reason: 'keep-awake' });
  return sessions.get(sessionId);
}
