/**
 * The session service: lifecycle of session machines (create, suspend,
 * resume, pause, terminate), with every transition recorded durably before
 * and after it touches the sandbox, so that a crash at any point leaves a
 * session that `reconcile()` can bring back to a resumable state.
 */
import { AirlockError, toAirlockError } from './errors.js';
import type { ExecOutcome, ExecRequest, SandboxDriver, SandboxHandle, SandboxResources, SandboxSpec } from './sandbox-driver.js';
import type { SessionDisks } from './session-disks.js';
import type { Store } from './store.js';
import type { SnapshotArtifacts } from './snapshot-artifacts.js';
import type { SnapshotReason, SnapshotRecord } from './snapshot.js';
import type { ImageCatalog, ImageRecord } from '../images/image-catalog.js';
import type { SessionContract } from '../policy/session-contract.js';
import { newId } from './ids.js';
import { systemClock, secondsBetween, type Clock } from './clock.js';
import { SessionLocks } from './session-locks.js';
import type { SessionNetworks } from './session-networks.js';
import { freshSeed, LifecycleHooks } from './lifecycle-hooks.js';
import {
  assertTransition,
  emptyGuard,
  emptyMeters,
  type ExecutionMode,
  type LifecycleOperation,
  type SessionRecord,
  type SessionState,
} from './session.js';

/** Host locations the service hands to the driver. */
export interface SessionLayout {
  sandboxStateDir(sandboxId: string): string;
}

/** Collaborators of the session service. */
export interface SessionServiceDeps {
  store: Store;
  driver: SandboxDriver;
  disks: SessionDisks;
  images: ImageCatalog;
  artifacts: SnapshotArtifacts;
  layout: SessionLayout;
  clock?: Clock;
  locks?: SessionLocks;
  /** networks of sessions whose contract has a `network` section; without it such sessions get none */
  networks?: SessionNetworks;
  /** on-resume hooks; default: run from the driver into the store's audit log */
  hooks?: LifecycleHooks;
}

/** What `create` needs. */
export interface CreateSessionInput {
  imageName?: string;
  contract: SessionContract;
  mode?: ExecutionMode;
}

/** The default image sessions start from. */
export const DEFAULT_IMAGE = 'debian-bookworm';

/** Lifecycle of sessions. */
export class SessionService {
  readonly locks: SessionLocks;
  /** runs on-resume hooks; the fork service shares it for on-fork hooks */
  readonly hooks: LifecycleHooks;
  private readonly store: Store;
  private readonly driver: SandboxDriver;
  private readonly disks: SessionDisks;
  private readonly images: ImageCatalog;
  private readonly artifacts: SnapshotArtifacts;
  private readonly layout: SessionLayout;
  private readonly clock: Clock;
  private readonly networks: SessionNetworks | undefined;

  constructor(deps: SessionServiceDeps) {
    this.store = deps.store;
    this.driver = deps.driver;
    this.disks = deps.disks;
    this.images = deps.images;
    this.artifacts = deps.artifacts;
    this.layout = deps.layout;
    this.clock = deps.clock ?? systemClock;
    this.locks = deps.locks ?? new SessionLocks();
    this.networks = deps.networks;
    this.hooks = deps.hooks ?? new LifecycleHooks({ driver: deps.driver, store: deps.store });
  }

  /** The session, or SESSION_NOT_FOUND. */
  get(id: string): SessionRecord {
    const session = this.store.getSession(id);
    if (!session) {
      throw new AirlockError('SESSION_NOT_FOUND', `session ${id} does not exist; list sessions with \`airlock sessions ls\``, {
        details: { sessionId: id },
      });
    }
    return session;
  }

  /** Sessions, newest last. */
  list(states?: SessionState[]): SessionRecord[] {
    return this.store.listSessions(states ? { states } : {});
  }

  /** Creates a session and starts its machine (per-call sessions only get their disk). */
  async create(input: CreateSessionInput): Promise<SessionRecord> {
    const image = await this.images.get(input.imageName ?? DEFAULT_IMAGE);
    const now = this.clock.now().toISOString();
    const contract = input.contract;
    const resources = resourcesOf(contract);
    const session: SessionRecord = {
      id: newId('ses'),
      state: 'creating',
      pendingOperation: 'create',
      mode: input.mode ?? 'machine',
      tenant: contract.identity.tenant,
      principal: contract.identity.principal,
      imageName: image.name,
      imageDigest: image.digest,
      contractVersion: 1,
      contract: contract as unknown as Record<string, unknown>,
      resources,
      sandbox: null,
      generation: 0,
      resumeSnapshotId: null,
      lineage: null,
      failure: null,
      createdAt: now,
      updatedAt: now,
      stateSince: now,
      lastActivityAt: now,
      meters: emptyMeters(),
      guard: emptyGuard(),
    };
    this.store.transaction(() => {
      this.store.insertSession(session);
      this.store.appendAudit({
        sessionId: session.id,
        type: 'session.created',
        data: {
          image: image.name,
          imageDigest: image.digest,
          contractVersion: session.contractVersion,
          contract: session.contract,
          mode: session.mode,
          tenant: session.tenant,
          principal: session.principal,
          resources,
        },
      });
    });
    return this.locks.exclusive(session.id, async () => {
      try {
        await this.disks.create(session.id, resources.diskMb);
        if (session.mode === 'per-call') {
          return this.commit(session, { state: 'running', pendingOperation: null }, 'session.started', { mode: 'per-call' });
        }
        session.generation = 1;
        const handle = await this.driver.start(await this.specFor(session, image));
        return this.commit(session, { state: 'running', pendingOperation: null, sandbox: handle }, 'session.started', {
          sandboxId: handle.sandboxId,
          driver: this.driver.name,
        });
      } catch (error) {
        const failure = toAirlockError(error, 'DRIVER_FAILED');
        await this.disks.destroy(session.id).catch(() => undefined);
        await this.networks?.release(session.id).catch(() => undefined);
        this.commit(session, { state: 'failed', pendingOperation: null, failure: { code: failure.code, message: failure.message } }, 'session.failed', {
          operation: 'create',
          code: failure.code,
          message: failure.message,
        });
        throw failure;
      }
    });
  }

  /** Checkpoints the machine's memory and processes and stops it; the disk stays. */
  async suspend(id: string, reason: 'manual' | 'idle' = 'manual'): Promise<SessionRecord> {
    return this.locks.exclusive(id, () => this.suspendLocked(this.get(id), reason));
  }

  /** Restores a suspended (or thaws a paused) machine where it stopped. */
  async resume(id: string): Promise<SessionRecord> {
    return this.locks.exclusive(id, () => this.resumeLocked(this.get(id)));
  }

  /** Freezes the machine in place: no CPU, memory kept. */
  async pause(id: string, reason: 'manual' | 'idle' = 'manual'): Promise<SessionRecord> {
    return this.locks.exclusive(id, () => this.pauseLocked(this.get(id), reason));
  }

  /**
   * Puts an idle machine to sleep (the idle sleeper's entry point). Takes the
   * exclusive lock, so it waits for calls in flight, and then asks `stillIdle`
   * again: a call that slipped in before the lock cancels the sleep.
   */
  async sleepIfIdle(id: string, depth: 'paused' | 'suspended', stillIdle: (session: SessionRecord) => boolean): Promise<SessionRecord | undefined> {
    return this.locks.exclusive(id, async () => {
      const session = this.get(id);
      if (session.mode !== 'machine' || session.pendingOperation || !stillIdle(session)) return undefined;
      if (depth === 'suspended') return session.state === 'running' || session.state === 'paused' ? this.suspendLocked(session, 'idle') : undefined;
      return session.state === 'running' ? this.pauseLocked(session, 'idle') : undefined;
    });
  }

  private async pauseLocked(session: SessionRecord, reason: 'manual' | 'idle'): Promise<SessionRecord> {
    this.requireMachine(session, 'pause');
    assertTransition(session, 'pause');
    await this.driver.pause(this.handleOf(session));
    return this.commit(session, { state: 'paused' }, 'session.paused', { reason });
  }

  /** Destroys the machine, its disk and every snapshot of it; keeps metadata and history. */
  async terminate(id: string): Promise<SessionRecord> {
    return this.locks.exclusive(id, async () => {
      const session = this.get(id);
      if (session.state === 'terminated') return session;
      assertTransition(session, 'terminate');
      this.mark(session, 'terminate');
      await this.sanitize(session);
      await this.networks?.release(session.id);
      return this.commit(session, { state: 'terminated', pendingOperation: null, sandbox: null, resumeSnapshotId: null }, 'session.terminated', {
        sanitized: ['sandbox', 'disk', 'memory-images'],
      });
    });
  }

  /**
   * Runs `work` with the session's machine running, waking it first if it
   * sleeps. Holds the shared lock, so no suspend can start meanwhile.
   * Returns how long the machine's sleep delayed the work: waiting for a
   * pause or suspend in progress plus the wake-up (0 when it was running).
   */
  async withMachine<T>(id: string, work: (handle: SandboxHandle, session: SessionRecord) => Promise<T>): Promise<{ result: T; resumeMs: number }> {
    const begun = Date.now();
    let slept = false;
    for (;;) {
      const outcome = await this.locks.shared(id, async () => {
        const session = this.get(id);
        this.requireCallable(session);
        if (session.state !== 'running' || !session.sandbox) return undefined;
        const resumeMs = slept ? Date.now() - begun : 0;
        this.touch(session);
        const result = await work(session.sandbox, session);
        // idleness counts from the end of the last call, not its start
        this.touch(session);
        return { result, resumeMs };
      });
      if (outcome) return outcome;
      slept = true;
      await this.locks.exclusive(id, async () => {
        const session = this.get(id);
        this.requireCallable(session);
        if (session.state === 'suspended' || session.state === 'paused') await this.resumeLocked(session);
      });
    }
  }

  /**
   * Runs one command in a fresh sandbox over the session's disk (per-call
   * mode, or an ephemeral call of a machine session). Holds the shared lock,
   * so it never sees a disk in the middle of a suspend.
   */
  async runEphemeral(id: string, request: Omit<ExecRequest, 'argv'> & { argv: string[] }): Promise<ExecOutcome> {
    return this.locks.shared(id, async () => {
      const session = this.get(id);
      if (session.state === 'creating' || session.state === 'terminated' || session.state === 'failed') {
        this.requireCallableState(session);
      }
      const image = await this.images.get(session.imageName);
      const spec = await this.specFor(session, image);
      const sandboxId = `airlock-${session.id}-run-${newId('c').slice(2, 12)}`;
      this.touch(session);
      const outcome = await this.driver.runOnce(
        { ...spec, sandboxId, stateDir: this.layout.sandboxStateDir(sandboxId), oneShot: { argv: request.argv } },
        request,
      );
      this.store.transaction(() => {
        const fresh = this.store.getSession(id);
        if (!fresh) return;
        fresh.meters.perCallSeconds = (fresh.meters.perCallSeconds ?? 0) + outcome.durationMs / 1000;
        fresh.lastActivityAt = this.clock.now().toISOString();
        this.store.updateSession(fresh);
      });
      return outcome;
    });
  }

  /** Resets the runaway breaker (a human decided the agent may go on). */
  resetGuard(id: string, by: string): SessionRecord {
    const session = this.get(id);
    const tripped = session.guard.tripped;
    return this.commit(session, { guard: emptyGuard() }, 'guard.reset', { by, wasTripped: tripped !== null, callKey: tripped?.callKey ?? null });
  }

  /** Records activity, for the idle suspender and metering. */
  touch(session: SessionRecord): void {
    const fresh = this.store.getSession(session.id);
    if (!fresh) return;
    fresh.lastActivityAt = this.clock.now().toISOString();
    this.store.updateSession(fresh);
  }

  /**
   * Samples the machine's resource use into the session's meters: CPU (this
   * incarnation on top of the closed ones), peak memory, memory integrated over
   * time, and disk bytes. Called after every tool call and before a suspend.
   */
  async sampleUsage(id: string): Promise<void> {
    // Under the shared lock: a sample must not straddle a suspend, which closes the incarnation's CPU.
    await this.locks.shared(id, () => this.sampleUsageLocked(id));
  }

  private async sampleUsageLocked(id: string): Promise<void> {
    const session = this.store.getSession(id);
    if (!session) return;
    const usage = session.sandbox ? await this.driver.usage(session.sandbox).catch(() => undefined) : undefined;
    const disk = await this.disks.usage(id).catch(() => undefined);
    const now = this.clock.now();
    this.store.transaction(() => {
      const fresh = this.store.getSession(id);
      if (!fresh) return;
      const meters = { ...fresh.meters };
      if (usage) {
        meters.cpuSeconds = Math.max(meters.cpuSeconds, meters.cpuSecondsClosed + usage.cpuSeconds);
        meters.peakMemoryBytes = Math.max(meters.peakMemoryBytes, usage.peakMemoryBytes);
        const since = meters.memorySampledAt ? Math.max(0, (now.getTime() - Date.parse(meters.memorySampledAt)) / 1000) : 0;
        meters.memoryByteSeconds += since * usage.memoryBytes;
        meters.memorySampledAt = now.toISOString();
      }
      if (disk) meters.diskBytes = disk.usedBytes;
      this.store.updateSession({ ...fresh, meters });
    });
  }

  private async suspendLocked(session: SessionRecord, reason: 'manual' | 'idle'): Promise<SessionRecord> {
    this.requireMachine(session, 'suspend');
    assertTransition(session, 'suspend');
    const handle = this.handleOf(session);
    if (session.state === 'paused') await this.driver.unpause(handle);
    await this.sampleUsageLocked(session.id);
    const snapshotId = newId('snap');
    this.mark(session, 'suspend', { snapshotId });
    const imageDir = this.artifacts.pathFor(snapshotId);
    let sizeBytes = 0;
    let checksum = '';
    const started = Date.now();
    try {
      await this.disks.sync(session.id);
      // gVisor cannot save open TCP connections: the gateway resets the session's first.
      await this.networks?.quiesce(session.id);
      await this.driver.checkpoint(handle, imageDir, { leaveRunning: false });
      ({ checksum, sizeBytes } = await this.artifacts.seal(snapshotId));
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      await this.artifacts.remove(snapshotId).catch(() => undefined);
      const alive = await this.driver.status(handle).catch(() => 'missing' as const);
      if (alive === 'running' || alive === 'paused') {
        this.commit(session, { state: 'running', pendingOperation: null }, 'session.suspend-failed', {
          code: failure.code,
          message: failure.message,
          stillRunning: true,
        });
      } else {
        this.commit(session, { state: 'failed', pendingOperation: null, sandbox: null, failure: { code: failure.code, message: failure.message } }, 'session.failed', {
          operation: 'suspend',
          code: failure.code,
          message: failure.message,
        });
      }
      throw new AirlockError(failure.code, `suspend of session ${session.id} failed: ${failure.message}`, {
        cause: failure,
        details: { sessionId: session.id, stillRunning: alive === 'running' || alive === 'paused' },
      });
    }
    await this.driver.destroy(handle).catch(() => undefined);
    const previous = session.resumeSnapshotId;
    const snapshot = this.snapshotRecord(session, snapshotId, 'suspend', { checksum, sizeBytes, parent: previous });
    const suspended = this.store.transaction(() => {
      this.store.insertSnapshot(snapshot);
      const result = this.commit(session, { state: 'suspended', pendingOperation: null, sandbox: null, resumeSnapshotId: snapshotId }, 'session.suspended', {
        reason,
        snapshotId,
        memoryImageBytes: sizeBytes,
        checksum,
        durationMs: Date.now() - started,
      });
      result.meters.snapshotBytes = sizeBytes;
      // the next incarnation's cgroup counts CPU from zero
      result.meters.cpuSecondsClosed = result.meters.cpuSeconds;
      delete result.meters.memorySampledAt;
      this.store.updateSession(result);
      return result;
    });
    if (previous) await this.dropSnapshot(previous, 'superseded');
    return suspended;
  }

  private async resumeLocked(session: SessionRecord): Promise<SessionRecord> {
    this.requireMachine(session, 'resume');
    assertTransition(session, 'resume');
    if (session.state === 'paused') {
      await this.driver.unpause(this.handleOf(session));
      return this.commit(session, { state: 'running' }, 'session.unpaused', {});
    }
    const snapshotId = session.resumeSnapshotId;
    const snapshot = snapshotId ? this.store.getSnapshot(snapshotId) : undefined;
    if (!snapshot || snapshot.deletedAt) {
      throw new AirlockError('SNAPSHOT_NOT_FOUND', `session ${session.id} has no memory image to resume from; terminate it`, {
        details: { sessionId: session.id },
      });
    }
    const started = Date.now();
    await this.artifacts.verify(snapshot.id, snapshot.checksum);
    const image = await this.images.get(session.imageName);
    await this.disks.ensureMounted(session.id);
    session.generation += 1;
    this.mark(session, 'resume');
    const spec = await this.specFor(session, image);
    let handle: SandboxHandle;
    let resumed: SessionRecord;
    try {
      handle = await this.driver.restore(spec, this.artifacts.pathFor(snapshot.id));
      resumed = this.commit(session, { state: 'running', pendingOperation: null, sandbox: handle }, 'session.resumed', {
        snapshotId: snapshot.id,
        sandboxId: handle.sandboxId,
        durationMs: Date.now() - started,
      });
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      await this.driver
        .destroy({ sandboxId: spec.sandboxId, sessionId: session.id, driverData: {} })
        .catch(() => undefined);
      this.commit(session, { state: 'suspended', pendingOperation: null }, 'session.resume-failed', {
        code: failure.code,
        message: failure.message,
      });
      throw failure;
    }
    // After the commit: a failing hook is recorded and never undoes the resume.
    await this.hooks.run(handle, session.id, 'on-resume', { AIRLOCK_SESSION_ID: session.id, AIRLOCK_RESUME_SEED: freshSeed(), AIRLOCK_SNAPSHOT_ID: snapshot.id });
    return resumed;
  }

  private async sanitize(session: SessionRecord): Promise<void> {
    if (session.sandbox) await this.driver.destroy(session.sandbox);
    await this.disks.destroy(session.id);
    for (const snapshot of this.store.listSnapshots({ sessionId: session.id })) {
      if (!snapshot.deletedAt) await this.dropSnapshot(snapshot.id, 'session-terminated');
    }
  }

  /** Deletes a snapshot's bytes and records it. */
  async dropSnapshot(snapshotId: string, why: string): Promise<void> {
    const snapshot = this.store.getSnapshot(snapshotId);
    if (!snapshot || snapshot.deletedAt) return;
    await this.artifacts.remove(snapshotId);
    this.store.transaction(() => {
      this.store.updateSnapshot({ ...snapshot, deletedAt: this.clock.now().toISOString() });
      this.store.appendAudit({ sessionId: snapshot.sessionId, type: 'snapshot.deleted', data: { snapshotId, reason: why } });
    });
  }

  /** Builds the driver spec for the session's next sandbox incarnation. */
  async specFor(session: SessionRecord, image: ImageRecord): Promise<SandboxSpec> {
    const diskDir = await this.disks.ensureMounted(session.id);
    const sandboxId = `airlock-${session.id}-g${session.generation}`;
    const net = await this.networks?.prepare(session, image);
    return {
      sandboxId,
      sessionId: session.id,
      rootfsDir: image.rootfsDir,
      diskDir,
      stateDir: this.layout.sandboxStateDir(sandboxId),
      hostname: session.id.replace(/_/g, '-'),
      resources: session.resources,
      env: net ? { ...image.env, ...net.env } : image.env,
      ...(net ? { network: net.network } : {}),
    };
  }

  private snapshotRecord(
    session: SessionRecord,
    id: string,
    reason: SnapshotReason,
    facts: { checksum: string; sizeBytes: number; parent: string | null; name?: string | null },
  ): SnapshotRecord {
    return {
      id,
      sessionId: session.id,
      name: facts.name ?? null,
      parentSnapshotId: facts.parent,
      imageName: session.imageName,
      imageDigest: session.imageDigest,
      contractVersion: session.contractVersion,
      reason,
      path: this.artifacts.pathFor(id),
      sizeBytes: facts.sizeBytes,
      checksum: facts.checksum,
      createdAt: this.clock.now().toISOString(),
      expiresAt: null,
      deletedAt: null,
    };
  }

  /** Records that an operation is in flight before it touches the sandbox. */
  private mark(session: SessionRecord, operation: LifecycleOperation, data: Record<string, unknown> = {}): void {
    const fresh = this.get(session.id);
    fresh.pendingOperation = operation;
    fresh.generation = session.generation;
    fresh.updatedAt = this.clock.now().toISOString();
    this.store.transaction(() => {
      this.store.updateSession(fresh);
      this.store.appendAudit({ sessionId: session.id, type: `session.${operation}-started`, data });
    });
    Object.assign(session, fresh);
  }

  /** Applies a state change, charges wall time to the state left, and audits it, in one transaction. */
  commit(session: SessionRecord, change: Partial<SessionRecord>, auditType: string, data: Record<string, unknown>): SessionRecord {
    return this.store.transaction(() => {
      const fresh = this.store.getSession(session.id) ?? session;
      const now = this.clock.now();
      const next: SessionRecord = { ...fresh, ...change, generation: session.generation, updatedAt: now.toISOString() };
      if (change.state && change.state !== fresh.state) {
        const elapsed = secondsBetween(fresh.stateSince, now);
        if (fresh.state === 'running') next.meters = { ...next.meters, runningSeconds: next.meters.runningSeconds + elapsed };
        if (fresh.state === 'paused') next.meters = { ...next.meters, pausedSeconds: next.meters.pausedSeconds + elapsed };
        if (fresh.state === 'suspended') next.meters = { ...next.meters, suspendedSeconds: next.meters.suspendedSeconds + elapsed };
        next.stateSince = now.toISOString();
      }
      this.store.updateSession(next);
      this.store.appendAudit({ sessionId: session.id, type: auditType, data: { ...data, state: next.state } });
      Object.assign(session, next);
      return next;
    });
  }

  private requireMachine(session: SessionRecord, operation: string): void {
    if (session.mode === 'per-call') {
      throw new AirlockError('INVALID_STATE', `cannot ${operation} session ${session.id}: it runs each call in a fresh sandbox and has no machine`, {
        details: { sessionId: session.id, mode: session.mode },
      });
    }
  }

  private requireCallable(session: SessionRecord): void {
    if (session.mode === 'per-call') this.requireMachine(session, 'run a call on the machine of');
    this.requireCallableState(session);
  }

  private requireCallableState(session: SessionRecord): void {
    if (session.state === 'creating' || session.pendingOperation === 'terminate') {
      throw new AirlockError('SESSION_BUSY', `session ${session.id} is being ${session.state === 'creating' ? 'created' : 'terminated'}; retry in a moment`, {
        details: { sessionId: session.id, state: session.state },
      });
    }
    if (session.state === 'terminated' || session.state === 'failed') {
      const why = session.state === 'terminated' ? 'it was terminated; create a new session' : `it failed (${session.failure?.message ?? 'unknown cause'}); terminate it and create a new one`;
      throw new AirlockError('INVALID_STATE', `session ${session.id} cannot run tool calls: ${why}`, {
        details: { sessionId: session.id, state: session.state },
      });
    }
  }

  private handleOf(session: SessionRecord): SandboxHandle {
    if (!session.sandbox) {
      throw new AirlockError('INVALID_STATE', `session ${session.id} has no running machine`, { details: { sessionId: session.id } });
    }
    return session.sandbox;
  }
}

/** Resources of a session from its contract, with defaults. */
export function resourcesOf(contract: SessionContract): SandboxResources {
  const declared = (contract as { resources?: Partial<SandboxResources> }).resources ?? {};
  return {
    cpus: declared.cpus ?? 1,
    memoryMb: declared.memoryMb ?? 512,
    diskMb: declared.diskMb ?? 2048,
    maxProcesses: declared.maxProcesses ?? 256,
  };
}
