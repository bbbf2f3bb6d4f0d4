/**
 * Suspend and resume of session machines: memory and processes to a
 * checksummed image and back, the disk staying where it is. Each step is
 * marked in the store before it touches the sandbox, so that the reconciler
 * can finish or roll back what a crashed server left half done. The session
 * service calls these under the session's exclusive lock.
 */
import { AirlockError, toAirlockError } from './errors.js';
import type { SandboxDriver, SandboxHandle } from './sandbox-driver.js';
import type { SessionDisks } from './session-disks.js';
import type { Store } from './store.js';
import type { SealedSnapshot, SnapshotArtifacts } from './snapshot-artifacts.js';
import type { SnapshotReason, SnapshotRecord } from './snapshot.js';
import type { ImageCatalog } from '../images/image-catalog.js';
import type { SessionNetworks } from './session-networks.js';
import type { SessionService } from './session-service.js';
import type { UsageMeter } from './usage-meter.js';
import type { Clock } from './clock.js';
import { newId } from './ids.js';
import { freshSeed, type LifecycleHooks } from './lifecycle-hooks.js';
import { assertTransition, machineHandle, requireMachine, type SessionRecord } from './session.js';

/** Collaborators of suspend and resume. */
export interface HibernationDeps {
  store: Store;
  driver: SandboxDriver;
  disks: SessionDisks;
  images: ImageCatalog;
  artifacts: SnapshotArtifacts;
  clock: Clock;
  networks: SessionNetworks | undefined;
  hooks: LifecycleHooks;
  usage: UsageMeter;
}

/** Suspends and resumes machines. */
export class MachineHibernation {
  constructor(
    private readonly sessions: SessionService,
    private readonly deps: HibernationDeps,
  ) {}

  /** Checkpoints a running or paused machine into a new memory image and stops it; the disk stays. */
  async suspend(session: SessionRecord, reason: 'manual' | 'idle'): Promise<SessionRecord> {
    requireMachine(session, 'suspend');
    assertTransition(session, 'suspend');
    const handle = machineHandle(session);
    if (session.state === 'paused') await this.deps.driver.unpause(handle);
    await this.deps.usage.sampleLocked(session.id);
    const snapshotId = newId('snap');
    this.sessions.mark(session, 'suspend', { snapshotId });
    const imageDir = this.deps.artifacts.pathFor(snapshotId);
    let sealed: SealedSnapshot;
    const started = Date.now();
    try {
      await this.deps.disks.sync(session.id);
      // gVisor cannot save open TCP connections: the gateway resets the session's first.
      await this.deps.networks?.quiesce(session.id);
      // Paused, not stopped, until the image is sealed (with object storage: uploaded, disk included):
      // a failure before then leaves the machine as it was, and nothing is lost.
      await this.deps.driver.pause(handle);
      await this.deps.driver.checkpoint(handle, imageDir, { leaveRunning: true });
      sealed = await this.deps.artifacts.seal(snapshotId, { liveDiskOf: session.id });
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      await this.deps.artifacts.remove(snapshotId).catch(() => undefined);
      const alive = await this.deps.driver.status(handle).catch(() => 'missing' as const);
      if (alive === 'paused') await this.deps.driver.unpause(handle).catch(() => undefined);
      if (alive === 'running' || alive === 'paused') {
        this.sessions.commit(session, { state: 'running', pendingOperation: null }, 'session.suspend-failed', {
          code: failure.code,
          message: failure.message,
          stillRunning: true,
        });
      } else {
        this.sessions.commit(session, { state: 'failed', pendingOperation: null, sandbox: null, failure: { code: failure.code, message: failure.message } }, 'session.failed', {
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
    await this.deps.driver.destroy(handle).catch(() => undefined);
    const { checksum, sizeBytes } = sealed;
    const previous = session.resumeSnapshotId;
    const snapshot = this.snapshotRecord(session, snapshotId, 'suspend', { checksum, sizeBytes, parent: previous });
    const suspended = this.deps.store.transaction(() => {
      this.deps.store.insertSnapshot(snapshot);
      const result = this.sessions.commit(session, { state: 'suspended', pendingOperation: null, sandbox: null, resumeSnapshotId: snapshotId }, 'session.suspended', {
        reason,
        snapshotId,
        memoryImageBytes: sizeBytes,
        checksum,
        durationMs: Date.now() - started,
        ...(sealed.uploaded ? { uploaded: sealed.uploaded } : {}),
      });
      result.meters.snapshotBytes = sizeBytes;
      // the next incarnation's cgroup counts CPU from zero
      result.meters.cpuSecondsClosed = result.meters.cpuSeconds;
      delete result.meters.memorySampledAt;
      this.deps.store.updateSession(result);
      return result;
    });
    if (previous) await this.sessions.dropSnapshot(previous, 'superseded');
    return suspended;
  }

  /** Thaws a paused machine, or restores a suspended one from its memory image and runs its on-resume hooks. */
  async resume(session: SessionRecord): Promise<SessionRecord> {
    requireMachine(session, 'resume');
    assertTransition(session, 'resume');
    if (session.state === 'paused') {
      await this.deps.driver.unpause(machineHandle(session));
      return this.sessions.commit(session, { state: 'running' }, 'session.unpaused', {});
    }
    const snapshotId = session.resumeSnapshotId;
    const snapshot = snapshotId ? this.deps.store.getSnapshot(snapshotId) : undefined;
    if (!snapshot || snapshot.deletedAt) {
      throw new AirlockError('SNAPSHOT_NOT_FOUND', `session ${session.id} has no memory image to resume from; terminate it`, {
        details: { sessionId: session.id },
      });
    }
    const started = Date.now();
    const image = await this.deps.images.get(session.imageName);
    // Another node (or a rebuilt image) may hold other bytes under the same name: memory restored over them would not match.
    if (image.digest !== session.imageDigest) {
      throw new AirlockError('INVALID_STATE', `image ${image.name} here is ${image.digest}, but session ${session.id} was suspended on ${session.imageDigest}; its memory cannot run on another root filesystem. Import the same image on this host`, {
        details: { sessionId: session.id, expected: session.imageDigest, actual: image.digest },
      });
    }
    // With object storage, what is not on this host (memory image, disk) is fetched and verified first.
    const fetchedMemory = await this.deps.artifacts.verify(snapshot.id, snapshot.checksum);
    const fetchedDisk = await this.deps.artifacts.prepareDisk(snapshot.id, session.id);
    await this.deps.disks.ensureMounted(session.id);
    session.generation += 1;
    this.sessions.mark(session, 'resume');
    const spec = await this.sessions.specFor(session, image);
    let handle: SandboxHandle;
    let resumed: SessionRecord;
    try {
      handle = await this.deps.driver.restore(spec, this.deps.artifacts.pathFor(snapshot.id));
      resumed = this.sessions.commit(session, { state: 'running', pendingOperation: null, sandbox: handle }, 'session.resumed', {
        snapshotId: snapshot.id,
        sandboxId: handle.sandboxId,
        durationMs: Date.now() - started,
        ...(fetchedMemory || fetchedDisk ? { fetched: { memory: fetchedMemory, disk: fetchedDisk } } : {}),
      });
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      await this.deps.driver
        .destroy({ sandboxId: spec.sandboxId, sessionId: session.id, driverData: {} })
        .catch(() => undefined);
      this.sessions.commit(session, { state: 'suspended', pendingOperation: null }, 'session.resume-failed', {
        code: failure.code,
        message: failure.message,
      });
      throw failure;
    }
    // After the commit: a failing hook is recorded and never undoes the resume.
    await this.deps.hooks.run(handle, session.id, 'on-resume', { AIRLOCK_SESSION_ID: session.id, AIRLOCK_RESUME_SEED: freshSeed(), AIRLOCK_SNAPSHOT_ID: snapshot.id });
    return resumed;
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
      path: this.deps.artifacts.pathFor(id),
      sizeBytes: facts.sizeBytes,
      checksum: facts.checksum,
      createdAt: this.deps.clock.now().toISOString(),
      expiresAt: null,
      deletedAt: null,
    };
  }
}
