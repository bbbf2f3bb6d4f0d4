/**
 * Snapshots as artifacts: memory, processes and disk of a session at one
 * instant, named, checksummed, listed, removed and expired by the contract's
 * retention. Consistency: the machine is paused, its memory checkpointed
 * (left running) and its disk copied while it stays paused, then it is
 * thawed; so the disk copy is exactly the disk the checkpointed processes
 * saw. Checksumming (slow) happens after the thaw. Suspend snapshots (memory
 * only: their disk stays live) are listed here too.
 */
import { requireCapability, type SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { SealedSnapshot, SnapshotArtifacts } from './snapshot-artifacts.js';
import type { SnapshotReason, SnapshotRecord } from './snapshot.js';
import type { Store } from './store.js';
import type { SessionRecords } from './session-records.js';
import type { SessionLocks } from './session-locks.js';
import type { SnapshotDisposal } from './snapshot-disposal.js';
import type { AuditLog } from '../audit/audit-log.js';
import { requireOwned, type SessionRecord } from './session.js';
import { AirlockError, toAirlockError } from './errors.js';
import { newId } from './ids.js';
import { systemClock, type Clock } from './clock.js';

/** Collaborators of the snapshot service. */
export interface SnapshotServiceDeps {
  store: Store;
  audit: AuditLog;
  records: SessionRecords;
  locks: SessionLocks;
  drivers: SandboxDrivers;
  disks: SessionDisks;
  artifacts: SnapshotArtifacts;
  disposal: SnapshotDisposal;
  clock?: Clock;
}

/** A running retention sweeper; `stop()` ends it. */
export interface RetentionSweeper {
  stop(): void;
}

/** The 404 of a snapshot that does not exist, also the answer for a snapshot the caller may not name (fork). */
export function snapshotNotFound(id: string): AirlockError {
  return new AirlockError('SNAPSHOT_NOT_FOUND', `snapshot ${id} does not exist; list snapshots with \`airlock snapshots ls\``, { details: { snapshotId: id } });
}

/** Creates, lists, removes and expires snapshots. */
export class SnapshotService {
  private readonly store: Store;
  private readonly audit: AuditLog;
  private readonly records: SessionRecords;
  private readonly locks: SessionLocks;
  private readonly drivers: SandboxDrivers;
  private readonly disks: SessionDisks;
  private readonly artifacts: SnapshotArtifacts;
  private readonly disposal: SnapshotDisposal;
  private readonly clock: Clock;

  constructor(deps: SnapshotServiceDeps) {
    this.store = deps.store;
    this.audit = deps.audit;
    this.records = deps.records;
    this.locks = deps.locks;
    this.drivers = deps.drivers;
    this.disks = deps.disks;
    this.artifacts = deps.artifacts;
    this.disposal = deps.disposal;
    this.clock = deps.clock ?? systemClock;
  }

  /** The session, refused unless this server manages it (its machine and disk are on this host). */
  private async owned(sessionId: string): Promise<SessionRecord> {
    const session = await this.records.get(sessionId);
    requireOwned(session, this.records.owner);
    return session;
  }

  /** Snapshots a running (or paused) session; it is paused only while memory and disk are saved, then runs on. */
  async create(sessionId: string, options: { name?: string | null; reason?: Exclude<SnapshotReason, 'suspend'> } = {}): Promise<SnapshotRecord> {
    const snapshotId = newId('snap');
    await this.owned(sessionId);
    const { session, pausedMs } = await this.locks.exclusive(sessionId, async () => {
      const session = await this.records.get(sessionId);
      requireLiveMachine(session);
      const handle = session.sandbox;
      if (!handle) throw new AirlockError('INVALID_STATE', `session ${session.id} has no running machine`, { details: { sessionId } });
      const driver = this.drivers.forHandle(handle);
      requireCapability(driver, 'snapshot', 'snapshot a machine', session.id);
      requireCapability(driver, 'pause', 'hold a machine still while its memory and disk are saved', session.id);
      const wasPaused = session.state === 'paused';
      const pausedAt = Date.now();
      try {
        if (!wasPaused) await driver.pause(handle);
        try {
          // Paused already, the driver checkpoints without thawing; the disk is copied before the thaw.
          await driver.checkpoint(handle, this.artifacts.pathFor(snapshotId), { leaveRunning: true });
          await this.disks.snapshot(session.id, this.artifacts.diskPathFor(snapshotId));
        } finally {
          if (!wasPaused) await driver.unpause(handle);
        }
      } catch (error) {
        await this.artifacts.remove(snapshotId).catch(() => undefined);
        throw await this.failed(session, snapshotId, error);
      }
      return { session, pausedMs: Date.now() - pausedAt };
    });
    // Sealing reads every byte: done after the lock is released, so the session's calls do not wait for it.
    return this.sealAndInsert(session, snapshotId, { reason: options.reason ?? 'manual', name: options.name ?? null, parent: null, pausedMs });
  }

  /** A snapshot of the session as it is now: of its machine when it runs, of its suspend image when it sleeps. */
  async capture(sessionId: string, options: { name?: string | null; reason?: Exclude<SnapshotReason, 'suspend'> } = {}): Promise<SnapshotRecord> {
    const session = await this.owned(sessionId);
    if (session.mode === 'machine' && session.state === 'suspended') return this.fromSuspended(sessionId, options);
    return this.create(sessionId, options);
  }

  /**
   * A snapshot of a suspended session: its suspend image (linked, not copied)
   * plus a copy of its disk, which has not changed since the suspend.
   */
  async fromSuspended(sessionId: string, options: { name?: string | null; reason?: Exclude<SnapshotReason, 'suspend'> } = {}): Promise<SnapshotRecord> {
    const snapshotId = newId('snap');
    await this.owned(sessionId);
    const { session, memory } = await this.locks.exclusive(sessionId, async () => {
      const session = await this.records.get(sessionId);
      const memory = session.resumeSnapshotId ? await this.store.getSnapshot(session.resumeSnapshotId) : undefined;
      if (session.state !== 'suspended' || !memory || memory.deletedAt) {
        throw new AirlockError('INVALID_STATE', `session ${sessionId} is not suspended with a memory image (it is ${session.state})`, { details: { sessionId, state: session.state } });
      }
      await this.artifacts.verify(memory.id, memory.checksum);
      // The disk it copies must be the one the memory image belongs to (with object storage it may live elsewhere).
      await this.artifacts.prepareDisk(memory.id, session.id);
      try {
        await this.artifacts.derive(memory.id, snapshotId);
        // Under the lock: a resume would start changing the disk the memory image belongs to.
        await this.disks.snapshot(session.id, this.artifacts.diskPathFor(snapshotId));
      } catch (error) {
        await this.artifacts.remove(snapshotId).catch(() => undefined);
        throw await this.failed(session, snapshotId, error);
      }
      return { session, memory };
    });
    return this.sealAndInsert(session, snapshotId, { reason: options.reason ?? 'manual', name: options.name ?? null, parent: memory.id, pausedMs: 0 });
  }

  /** The snapshot (also when its bytes were deleted), or SNAPSHOT_NOT_FOUND. */
  async get(id: string): Promise<SnapshotRecord> {
    const snapshot = await this.store.getSnapshot(id);
    if (!snapshot) {
      throw snapshotNotFound(id);
    }
    return snapshot;
  }

  /** Snapshots, oldest first; deleted ones only when asked. */
  async list(query: { sessionId?: string; includeDeleted?: boolean } = {}): Promise<SnapshotRecord[]> {
    const all = await this.store.listSnapshots(query.sessionId === undefined ? {} : { sessionId: query.sessionId });
    return query.includeDeleted ? all : all.filter((snapshot) => !snapshot.deletedAt);
  }

  /** The snapshot if its bytes still exist and have not expired; else SNAPSHOT_NOT_FOUND saying why. */
  async restorable(id: string): Promise<SnapshotRecord> {
    const snapshot = await this.get(id);
    const now = this.clock.now();
    const expired = snapshot.expiresAt !== null && Date.parse(snapshot.expiresAt) <= Date.parse(snapshot.deletedAt ?? now.toISOString());
    if (snapshot.deletedAt || expired) {
      const what = expired ? `expired at ${snapshot.expiresAt ?? ''} (retention)` : `was deleted at ${snapshot.deletedAt ?? ''}`;
      throw new AirlockError('SNAPSHOT_NOT_FOUND', `snapshot ${id} ${what}; its bytes are gone. Take a new one with \`airlock snapshots create\``, {
        details: { snapshotId: id, deletedAt: snapshot.deletedAt, expiresAt: snapshot.expiresAt },
      });
    }
    return snapshot;
  }

  /** Deletes a snapshot's bytes (its record stays, marked deleted); refuses a suspended session's resume point. */
  async remove(id: string): Promise<SnapshotRecord> {
    const found = await this.get(id);
    await this.owned(found.sessionId);
    // Keyed by snapshot id: waits for forks restoring from it (they hold it shared).
    return this.locks.exclusive(id, async () => {
      const snapshot = await this.get(id);
      if (snapshot.deletedAt) return snapshot;
      const session = await this.store.getSession(snapshot.sessionId);
      if (session && session.state === 'suspended' && session.resumeSnapshotId === id) {
        throw new AirlockError('INVALID_STATE', `snapshot ${id} is what suspended session ${session.id} resumes from; resume or terminate the session first`, {
          details: { snapshotId: id, sessionId: session.id },
        });
      }
      return (await this.disposal.drop(snapshot.id, 'removed')) ?? snapshot;
    });
  }

  /** Deletes the bytes of every snapshot past its expiry and audits `snapshot.expired`; returns their ids. */
  async sweepExpired(): Promise<string[]> {
    const now = this.clock.now().getTime();
    const expired: string[] = [];
    const mine = new Set((await this.records.list({ owner: this.records.owner })).map((session) => session.id));
    for (const candidate of await this.store.listSnapshots()) {
      if (candidate.deletedAt || candidate.expiresAt === null || Date.parse(candidate.expiresAt) > now) continue;
      // Another server's snapshots are on its host: it expires them.
      if (!mine.has(candidate.sessionId)) continue;
      await this.locks.exclusive(candidate.id, async () => {
        const snapshot = await this.store.getSnapshot(candidate.id);
        if (!snapshot || snapshot.deletedAt) return;
        await this.disposal.drop(snapshot.id, 'retention', 'snapshot.expired');
        expired.push(snapshot.id);
      });
    }
    return expired;
  }

  /** Sweeps now and then every `intervalMs`; the timer never keeps the process alive. */
  startRetentionSweeper(intervalMs = 60_000, onError: (error: unknown) => void = () => undefined): RetentionSweeper {
    let running: Promise<unknown> = Promise.resolve();
    const sweep = (): void => {
      // One sweep at a time; a failed deletion is retried by the next sweep.
      running = running.then(() => this.sweepExpired()).catch(onError);
    };
    sweep();
    const timer = setInterval(sweep, intervalMs);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  private async sealAndInsert(
    session: SessionRecord,
    snapshotId: string,
    facts: { reason: SnapshotReason; name: string | null; parent: string | null; pausedMs: number },
  ): Promise<SnapshotRecord> {
    let sealed: SealedSnapshot;
    try {
      sealed = await this.artifacts.seal(snapshotId);
    } catch (error) {
      await this.artifacts.remove(snapshotId).catch(() => undefined);
      throw await this.failed(session, snapshotId, error);
    }
    const record = this.record(session, snapshotId, facts.reason, { checksum: sealed.checksum, sizeBytes: sealed.sizeBytes, parent: facts.parent, name: facts.name });
    const kept = await this.store.transaction(async (tx) => {
      // A terminate that ran meanwhile deleted the session's snapshots; this one must not outlive it.
      if ((await tx.lockSession(session.id))?.state === 'terminated') return false;
      await tx.insertSnapshot(record);
      await this.audit.append(tx, {
        sessionId: record.sessionId,
        type: 'snapshot.created',
        data: {
          snapshotId: record.id,
          name: record.name,
          reason: record.reason,
          parentSnapshotId: record.parentSnapshotId,
          sizeBytes: record.sizeBytes,
          checksum: record.checksum,
          expiresAt: record.expiresAt,
          pausedMs: facts.pausedMs,
          ...(sealed.uploaded ? { uploaded: sealed.uploaded } : {}),
        },
      });
      return true;
    });
    if (!kept) {
      await this.artifacts.remove(snapshotId).catch(() => undefined);
      throw new AirlockError('INVALID_STATE', `session ${session.id} was terminated while its snapshot was being sealed; nothing was kept`, { details: { sessionId: session.id } });
    }
    return record;
  }

  private async failed(session: SessionRecord, snapshotId: string, error: unknown): Promise<AirlockError> {
    const failure = toAirlockError(error, 'DRIVER_FAILED');
    await this.audit.appendNow(this.store, { sessionId: session.id, type: 'snapshot.failed', data: { snapshotId, code: failure.code, message: failure.message } }).catch(() => undefined);
    return new AirlockError(failure.code, `snapshot of session ${session.id} failed, nothing was kept: ${failure.message}`, {
      cause: failure,
      details: { ...failure.details, sessionId: session.id },
    });
  }

  private record(
    session: SessionRecord,
    id: string,
    reason: SnapshotReason,
    facts: { checksum: string; sizeBytes: number; parent: string | null; name: string | null },
  ): SnapshotRecord {
    const now = this.clock.now();
    // contracts stored before retention existed lack the key
    const days = (session.contract.retention as { snapshotDays?: number } | undefined)?.snapshotDays;
    return {
      id,
      sessionId: session.id,
      name: facts.name,
      parentSnapshotId: facts.parent,
      imageName: session.imageName,
      imageDigest: session.imageDigest,
      contractVersion: session.contractVersion,
      reason,
      path: this.artifacts.pathFor(id),
      sizeBytes: facts.sizeBytes,
      checksum: facts.checksum,
      createdAt: now.toISOString(),
      expiresAt: days === undefined ? null : new Date(now.getTime() + days * 86_400_000).toISOString(),
      deletedAt: null,
    };
  }
}

/** Throws INVALID_STATE unless the session has a machine that is running or paused. */
function requireLiveMachine(session: SessionRecord): void {
  if (session.mode === 'per-call') {
    throw new AirlockError('INVALID_STATE', `session ${session.id} runs each call in a fresh sandbox and has no machine to snapshot; its disk is all it has`, {
      details: { sessionId: session.id, mode: session.mode },
    });
  }
  if (session.state === 'running' || session.state === 'paused') return;
  const hint =
    session.state === 'suspended' ? 'it is suspended: fork it directly (`airlock sessions fork`), or resume it first'
    : session.state === 'terminated' ? 'it was terminated; its machine, disk and snapshots are gone'
    : session.state === 'failed' ? 'it failed; its memory is lost (its disk is kept until it is terminated)'
    : 'it is still being created; retry in a moment';
  throw new AirlockError('INVALID_STATE', `cannot snapshot session ${session.id}: ${hint}`, { details: { sessionId: session.id, state: session.state } });
}
