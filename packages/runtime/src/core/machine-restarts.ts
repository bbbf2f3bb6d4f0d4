/**
 * A wedged or dead machine, and the way back from it. When a call finds the
 * machine's command slot silent (the agent stopped, killed or starved), the
 * session is marked `degraded` with the cause, so later calls are refused at
 * once with a hint instead of each failing the same way. `restart` replaces
 * the machine of a running, paused, degraded or failed session with a fresh
 * one on the same disk: files are kept, processes and memory are lost, and
 * the step is audited with what the session was before.
 */
import { AirlockError, toAirlockError } from './errors.js';
import type { ImageCatalog } from './image-catalog.js';
import { startEnvironment, type LifecycleHooks } from './lifecycle-hooks.js';
import type { SandboxHandle } from './sandbox-driver.js';
import type { SandboxDrivers } from './sandbox-drivers.js';
import type { SandboxSpecs } from './sandbox-specs.js';
import type { SessionDisks } from './session-disks.js';
import type { SessionRecords } from './session-records.js';
import type { SessionRecord } from './session.js';

/** What restarts need. */
export interface MachineRestartsDeps {
  records: SessionRecords;
  drivers: SandboxDrivers;
  disks: SessionDisks;
  images: ImageCatalog;
  specs: SandboxSpecs;
  hooks: LifecycleHooks;
}

/** Marks silent machines degraded, and starts fresh machines on kept disks. */
export class MachineRestarts {
  constructor(private readonly deps: MachineRestartsDeps) {}

  /**
   * Called when a call on a running machine failed with SANDBOX_NOT_ANSWERING:
   * asks the driver once more (it may repair a stopped agent) and marks the
   * session degraded only if the machine still does not answer.
   */
  async checkAfterSilence(session: SessionRecord, handle: SandboxHandle, error: AirlockError): Promise<void> {
    const driver = this.deps.drivers.forHandle(handle);
    const health = await driver.health(handle).catch((probe: unknown) => ({ answering: false, reason: toAirlockError(probe).message }));
    if (health.answering) return;
    const fresh = await this.deps.records.get(session.id);
    if (fresh.state !== 'running' || fresh.pendingOperation !== null) return;
    const message = `${error.message} (health check: ${health.reason ?? 'no answer'})`;
    await this.deps.records.transition(
      session.id,
      'degrade',
      { type: 'session.degraded', data: { code: error.code, message, reason: health.reason ?? null, sandboxId: handle.sandboxId } },
      { failure: { code: error.code, message } },
    );
  }

  /** Replaces the session's machine by a fresh one on the same disk; the caller holds the session's exclusive lock. */
  async restart(session: SessionRecord, by: string): Promise<SessionRecord> {
    const { records, drivers, disks, images, specs, hooks } = this.deps;
    if (session.mode === 'per-call') {
      throw new AirlockError('INVALID_STATE', `session ${session.id} runs every call in a fresh sandbox (per-call mode): there is no machine to restart`, {
        details: { sessionId: session.id },
      });
    }
    if (!(await disks.list()).includes(session.id)) {
      throw new AirlockError('INVALID_STATE', `session ${session.id} has no disk on this host any more: nothing to restart on; terminate it`, {
        details: { sessionId: session.id },
      });
    }
    const image = await images.get(session.imageName);
    if (image.digest !== session.imageDigest) {
      throw new AirlockError(
        'INVALID_STATE',
        `image ${image.name} here is ${image.digest}, but session ${session.id} was made on ${session.imageDigest}; import the same image on this host, then restart`,
        { details: { sessionId: session.id, expected: session.imageDigest, actual: image.digest } },
      );
    }
    const before = session.state;
    const cause = session.failure;
    const marked = await records.transition(
      session.id,
      'begin-restart',
      { type: 'session.restart-started', data: { from: before, by, ...(cause ? { cause } : {}) } },
      (fresh) => ({ generation: fresh.generation + 1 }),
    );
    const driver = drivers.forSession(marked);
    const started = Date.now();
    let handle: SandboxHandle;
    try {
      // The old machine goes first: its processes must not write to the disk beside the new one.
      if (session.sandbox) await drivers.forHandle(session.sandbox).destroy(session.sandbox);
      for (const leftover of await driver.list()) {
        if (leftover.sessionId === session.id)
          await driver.destroy({ sandboxId: leftover.sandboxId, sessionId: session.id, driver: driver.name, driverData: {} });
      }
      handle = await driver.start(await specs.specFor(marked, image));
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      // The old machine may be gone already: the session cannot go back to what it was.
      await records.transition(session.id, 'cancel-restart', { type: 'session.restart-failed', data: { code: failure.code, message: failure.message } });
      await records.transition(
        session.id,
        'fail',
        { type: 'session.failed', data: { operation: 'restart', code: failure.code, message: failure.message } },
        { failure: { code: failure.code, message: failure.message }, sandbox: null },
      );
      throw failure;
    }
    const restarted = await records.transition(
      session.id,
      'finish-restart',
      {
        type: 'session.restarted',
        data: { from: before, by, sandboxId: handle.sandboxId, durationMs: Date.now() - started, lost: ['processes', 'memory'], kept: ['disk'] },
      },
      { sandbox: handle, failure: null, resumeSnapshotId: null },
    );
    // After the commit, like a start: a failing hook is recorded and never undoes the restart.
    if (image.startHooks !== false) await hooks.run(handle, session.id, 'on-start', { AIRLOCK_SESSION_ID: session.id, ...startEnvironment(session.contract) });
    return restarted;
  }
}
