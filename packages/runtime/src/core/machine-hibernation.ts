/**
 * Suspend and resume of session machines: memory and processes to a
 * checksummed image and back, the disk staying where it is. Each step is
 * recorded (a `begin-*` transition) before it touches the sandbox, so that
 * the reconciler can finish or roll back what a crashed server left half
 * done. The session service calls these under the session's exclusive lock.
 */
import { AirlockError, toAirlockError } from './errors.js';
import type { SandboxDriver, SandboxHandle, SandboxSpec } from './sandbox-driver.js';
import { requireCapability, type SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { Store } from './store.js';
import type { ArtifactTransfer, SealedSnapshot, SnapshotArtifacts } from './snapshot-artifacts.js';
import type { SnapshotReason, SnapshotRecord } from './snapshot.js';
import type { ImageCatalog } from './image-catalog.js';
import type { SessionNetworks } from './session-networks.js';
import type { SessionRecords } from './session-records.js';
import type { SandboxSpecs } from './sandbox-specs.js';
import type { SnapshotDisposal } from './snapshot-disposal.js';
import type { UsageMeter } from './usage-meter.js';
import type { SandboxTeardowns } from './sandbox-teardowns.js';
import type { Clock } from './clock.js';
import { newId } from './ids.js';
import { freshSeed, type LifecycleHooks } from './lifecycle-hooks.js';
import { assertTransition } from './session-transitions.js';
import { machineHandle, requireMachine, type SessionMeters, type SessionRecord } from './session.js';

/** Why a machine is woken: recorded with the wake, so that every resume says what asked for it. */
export interface WakeReason {
  reason: 'manual' | 'call' | 'port' | 'keep-awake' | 'takeover';
  /** the tool call that needed the machine */
  callId?: string;
  tool?: string;
}

/** Collaborators of suspend and resume. */
export interface HibernationDeps {
  store: Store;
  records: SessionRecords;
  drivers: SandboxDrivers;
  disks: SessionDisks;
  images: ImageCatalog;
  artifacts: SnapshotArtifacts;
  specs: SandboxSpecs;
  disposal: SnapshotDisposal;
  clock: Clock;
  networks: SessionNetworks | undefined;
  hooks: LifecycleHooks;
  usage: UsageMeter;
  /** where a suspended machine's old sandbox goes once its image is recorded */
  teardowns: SandboxTeardowns;
}

/** Suspends and resumes machines. */
export class MachineHibernation {
  constructor(private readonly deps: HibernationDeps) {}

  /** Checkpoints a running or paused machine into a new memory image and stops it; the disk stays. */
  async suspend(session: SessionRecord, reason: 'manual' | 'idle' | 'drain', by?: string): Promise<SessionRecord> {
    const { records, drivers, disks, networks, artifacts, usage, store } = this.deps;
    requireMachine(session, 'suspend');
    assertTransition(session, 'begin-suspend');
    const handle = machineHandle(session);
    const driver = drivers.forHandle(handle);
    requireCapability(driver, 'snapshot', 'save a machine to a snapshot', session.id);
    if (session.state === 'paused') await driver.unpause(handle);
    await usage.sampleLocked(session.id);
    const snapshotId = newId('snap');
    const marked = await records.transition(session.id, 'begin-suspend', { type: 'session.suspend-started', data: { snapshotId } });
    const imageDir = artifacts.pathFor(snapshotId);
    let sealed: SealedSnapshot;
    const started = Date.now();
    try {
      await disks.sync(session.id);
      // gVisor cannot save open TCP connections: the gateway resets the session's first.
      await networks?.quiesce(session.id);
      // Paused, not stopped, until the image is sealed (with object storage: uploaded, disk included):
      // a failure before then leaves the machine as it was, and nothing is lost. A driver that cannot
      // pause checkpoints and stops in one step.
      if (driver.capabilities.pause) {
        await driver.pause(handle);
        await driver.checkpoint(handle, imageDir, { leaveRunning: true });
      } else {
        await driver.checkpoint(handle, imageDir, { leaveRunning: false });
      }
      sealed = await artifacts.seal(snapshotId, { liveDiskOf: session.id });
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      await artifacts.remove(snapshotId).catch(() => undefined);
      const alive = await driver.status(handle).catch(() => 'missing' as const);
      if (alive === 'paused') await driver.unpause(handle).catch(() => undefined);
      const stillRunning = alive === 'running' || alive === 'paused';
      if (stillRunning) {
        await records.transition(session.id, 'cancel-suspend', {
          type: 'session.suspend-failed',
          data: { code: failure.code, message: failure.message, stillRunning: true },
        });
      } else {
        await records.transition(
          session.id,
          'fail',
          { type: 'session.failed', data: { operation: 'suspend', code: failure.code, message: failure.message } },
          { sandbox: null, failure: { code: failure.code, message: failure.message } },
        );
      }
      throw new AirlockError(failure.code, `suspend of session ${session.id} failed: ${failure.message}`, {
        cause: failure,
        details: { sessionId: session.id, stillRunning },
      });
    }
    const { checksum, sizeBytes } = sealed;
    const previous = marked.resumeSnapshotId;
    const snapshot = this.snapshotRecord(marked, snapshotId, 'suspend', { checksum, sizeBytes, parent: previous });
    const suspended = await store.transaction(async (tx) => {
      await tx.insertSnapshot(snapshot);
      return records.transition(
        session.id,
        'finish-suspend',
        {
          type: 'session.suspended',
          data: {
            reason,
            ...(by === undefined ? {} : { by }),
            snapshotId,
            memoryImageBytes: sizeBytes,
            checksum,
            durationMs: Date.now() - started,
            ...(sealed.uploaded ? { uploaded: sealed.uploaded } : {}),
          },
        },
        (fresh) => ({ sandbox: null, resumeSnapshotId: snapshotId, meters: closedIncarnation(fresh.meters, sizeBytes) }),
        { tx },
      );
    });
    // The image is sealed and recorded: the old sandbox is torn down off the suspend's path (a crash
    // meanwhile leaves an orphan for the reconciler: no record holds it any more).
    await this.deps.teardowns.release(driver, handle);
    if (previous) await this.deps.disposal.drop(previous, 'superseded');
    return suspended;
  }

  /** Thaws a paused machine, or restores a suspended one from its memory image and runs its on-resume hooks. */
  async resume(session: SessionRecord, wake: WakeReason): Promise<SessionRecord> {
    const { records, drivers, store, artifacts, images, specs, hooks } = this.deps;
    requireMachine(session, 'resume');
    const wokenBy = wakeData(wake);
    const driver = drivers.forSession(session);
    if (session.state === 'paused') {
      assertTransition(session, 'unpause');
      await drivers.forHandle(machineHandle(session)).unpause(machineHandle(session));
      return records.transition(session.id, 'unpause', { type: 'session.unpaused', data: wokenBy });
    }
    assertTransition(session, 'begin-resume');
    const snapshotId = session.resumeSnapshotId;
    const snapshot = snapshotId ? await store.getSnapshot(snapshotId) : undefined;
    if (!snapshot || snapshot.deletedAt) {
      throw new AirlockError('SNAPSHOT_NOT_FOUND', `session ${session.id} has no memory image to resume from; terminate it`, {
        details: { sessionId: session.id },
      });
    }
    const started = Date.now();
    const image = await images.get(session.imageName);
    // Another node (or a rebuilt image) may hold other bytes under the same name: memory restored over them would not match.
    if (image.digest !== session.imageDigest) {
      throw new AirlockError(
        'INVALID_STATE',
        `image ${image.name} here is ${image.digest}, but session ${session.id} was suspended on ${session.imageDigest}; its memory cannot run on another root filesystem. Import the same image on this host`,
        { details: { sessionId: session.id, expected: session.imageDigest, actual: image.digest } },
      );
    }
    // With object storage, what is not on this host (memory image, disk) is fetched and verified first.
    // An image this host wrote is verified while it is restored instead (docs/decisions/0019): the
    // restored machine is handed to nobody until its image matched, and is destroyed when it did not.
    const overlapped = session.contract.network === undefined && (await artifacts.isOnHost(snapshot.id));
    const verifying = overlapped ? settle(artifacts.verify(snapshot.id, snapshot.checksum)) : undefined;
    let fetchedMemory = verifying ? null : await artifacts.verify(snapshot.id, snapshot.checksum);
    const fetchedDisk = await artifacts.prepareDisk(snapshot.id, session.id).catch(async (error: unknown) => {
      await verifying;
      throw error;
    });
    // Fails early (before anything is marked) when the disk is gone; a VM's disk is left unmounted on the host.
    await specs.diskVolume(driver, session.id).catch(async (error: unknown) => {
      await verifying;
      throw error;
    });
    const marked = await records.transition(session.id, 'begin-resume', { type: 'session.resume-started', data: wokenBy }, (fresh) => ({
      generation: fresh.generation + 1,
    }));
    const spec = await specs.specFor(marked, image);
    let handle: SandboxHandle;
    let resumed: SessionRecord;
    try {
      const restored = await this.restoreVerified(driver, spec, snapshot.id, verifying);
      handle = restored.handle;
      if (restored.fetched) fetchedMemory = restored.fetched;
      resumed = await records.transition(
        session.id,
        'finish-resume',
        {
          type: 'session.resumed',
          data: {
            snapshotId: snapshot.id,
            sandboxId: handle.sandboxId,
            durationMs: Date.now() - started,
            ...(fetchedMemory || fetchedDisk ? { fetched: { memory: fetchedMemory, disk: fetchedDisk } } : {}),
            ...wokenBy,
          },
        },
        { sandbox: handle },
      );
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      await driver.destroy({ sandboxId: spec.sandboxId, sessionId: session.id, driver: driver.name, driverData: {} }).catch(() => undefined);
      await records.transition(session.id, 'cancel-resume', { type: 'session.resume-failed', data: { code: failure.code, message: failure.message } });
      throw failure;
    }
    // After the commit: a failing hook is recorded and never undoes the resume.
    await hooks.run(handle, session.id, 'on-resume', { AIRLOCK_SESSION_ID: session.id, AIRLOCK_RESUME_SEED: freshSeed(), AIRLOCK_SNAPSHOT_ID: snapshot.id });
    return resumed;
  }

  /**
   * Restores from the snapshot's image. With `verifying` (an image on this host, checked meanwhile), the
   * machine counts only once its image matched: a mismatch destroys it and fails the resume, and a copy
   * that object storage had to replace is restored again, from the fresh files.
   */
  private async restoreVerified(
    driver: SandboxDriver,
    spec: SandboxSpec,
    snapshotId: string,
    verifying: Promise<Settled<ArtifactTransfer | null>> | undefined,
  ): Promise<{ handle: SandboxHandle; fetched: ArtifactTransfer | null }> {
    const imageDir = this.deps.artifacts.pathFor(snapshotId);
    if (!verifying) return { handle: await driver.restore(spec, imageDir), fetched: null };
    const [restored, verified] = await Promise.all([settle(driver.restore(spec, imageDir)), verifying]);
    if (!verified.ok) {
      if (restored.ok) await driver.destroy(restored.value).catch(() => undefined);
      throw verified.error;
    }
    if (!restored.ok) throw restored.error;
    if (verified.value === null) return { handle: restored.value, fetched: null };
    await driver.destroy(restored.value);
    return { handle: await driver.restore(spec, imageDir), fetched: verified.value };
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

/** Meters once the machine's incarnation ended: the next one's cgroup counts CPU from zero. */
function closedIncarnation(meters: SessionMeters, snapshotBytes: number): SessionMeters {
  const { memorySampledAt: _sampled, ...rest } = meters;
  return { ...rest, snapshotBytes, cpuSecondsClosed: meters.cpuSeconds };
}

/** What a wake's audit records say about who asked for it. */
function wakeData(wake: WakeReason): Record<string, unknown> {
  return {
    wokenBy: wake.reason,
    ...(wake.callId ? { 'gen_ai.tool.call.id': wake.callId } : {}),
    ...(wake.tool ? { 'gen_ai.tool.name': wake.tool } : {}),
  };
}

/** A promise's outcome as a value, so that two can run side by side and both be looked at. */
type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value): Settled<T> => ({ ok: true, value }),
    (error: unknown): Settled<T> => ({ ok: false, error }),
  );
}
