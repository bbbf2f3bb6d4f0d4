/**
 * The session service: lifecycle of session machines (create, suspend,
 * resume, pause, terminate), with every transition recorded durably before
 * and after it touches the sandbox, so that a crash at any point leaves a
 * session that `reconcile()` can bring back to a resumable state.
 */
import { AirlockError, isAirlockError, toAirlockError } from './errors.js';
import type { ExecOutcome, ExecRequest, SandboxDriver, SandboxHandle, SandboxResources, SandboxSpec, SandboxVolume } from './sandbox-driver.js';
import { requireCapability, type SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { Store } from './store.js';
import type { SnapshotArtifacts } from './snapshot-artifacts.js';
import type { ImageCatalog, ImageRecord } from '../images/image-catalog.js';
import type { SessionContract } from '../policy/session-contract.js';
import { newId } from './ids.js';
import { systemClock, secondsBetween, type Clock } from './clock.js';
import { SessionLocks } from './session-locks.js';
import type { SessionNetworks } from './session-networks.js';
import { LifecycleHooks } from './lifecycle-hooks.js';
import { MachineHibernation } from './machine-hibernation.js';
import { UsageMeter } from './usage-meter.js';
import { desktopSize } from './desktop-size.js';
import {
  assertTransition,
  emptyGuard,
  machineHandle,
  requireCallable,
  requireCallableState,
  requireMachine,
  newSessionRecord,
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
  /** the drivers sessions may run on; a session keeps its driver for life */
  drivers: SandboxDrivers;
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
  /** the sandbox driver by name (`gvisor`, `microvm`); default: the contract's `sandbox`, else the server's default */
  sandbox?: string;
}

/** The default image sessions start from. */
export const DEFAULT_IMAGE = 'debian-bookworm';

/** Lifecycle of sessions. */
export class SessionService {
  readonly locks: SessionLocks;
  /** runs on-resume hooks; the fork service shares it for on-fork hooks */
  readonly hooks: LifecycleHooks;
  /** activity, resource samples and per-call time of sessions */
  readonly usage: UsageMeter;
  private readonly hibernation: MachineHibernation;
  /** the drivers of sessions, by name */
  readonly drivers: SandboxDrivers;
  private readonly store: Store;
  private readonly disks: SessionDisks;
  private readonly images: ImageCatalog;
  private readonly artifacts: SnapshotArtifacts;
  private readonly layout: SessionLayout;
  private readonly clock: Clock;
  private readonly networks: SessionNetworks | undefined;

  constructor(deps: SessionServiceDeps) {
    this.store = deps.store;
    this.drivers = deps.drivers;
    this.disks = deps.disks;
    this.images = deps.images;
    this.artifacts = deps.artifacts;
    this.layout = deps.layout;
    this.clock = deps.clock ?? systemClock;
    this.locks = deps.locks ?? new SessionLocks();
    this.networks = deps.networks;
    this.hooks = deps.hooks ?? new LifecycleHooks({ drivers: deps.drivers, store: deps.store });
    this.usage = new UsageMeter({ store: this.store, drivers: this.drivers, disks: this.disks, locks: this.locks, clock: this.clock });
    this.hibernation = new MachineHibernation(this, {
      store: this.store,
      drivers: this.drivers,
      disks: this.disks,
      images: this.images,
      artifacts: this.artifacts,
      clock: this.clock,
      networks: this.networks,
      hooks: this.hooks,
      usage: this.usage,
    });
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

  /** The driver of a session's machines. */
  driverOf(session: Pick<SessionRecord, 'driver'>): SandboxDriver {
    return this.drivers.forSession(session);
  }

  /** Creates a session and starts its machine (per-call sessions only get their disk). */
  async create(input: CreateSessionInput): Promise<SessionRecord> {
    const driver = this.drivers.get(chooseDriver(input, this.drivers.default.name));
    const image = await this.images.get(input.imageName ?? DEFAULT_IMAGE);
    const now = this.clock.now().toISOString();
    const contract = input.contract;
    const resources = resourcesOf(contract);
    const session = newSessionRecord(
      newId('ses'),
      {
        mode: input.mode ?? 'machine',
        tenant: contract.identity.tenant,
        principal: contract.identity.principal,
        imageName: image.name,
        imageDigest: image.digest,
        contractVersion: 1,
        contract: contract as unknown as Record<string, unknown>,
        resources,
        generation: 0,
        lineage: null,
        driver: driver.name,
      },
      now,
    );
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
          sandbox: driver.name,
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
        const handle = await driver.start(await this.specFor(session, image));
        const started = this.commit(session, { state: 'running', pendingOperation: null, sandbox: handle }, 'session.started', {
          sandboxId: handle.sandboxId,
          driver: driver.name,
          imageDigest: image.digest,
          ...(await runtimeOf(driver)),
        });
        // After the commit, like on-resume: a failing hook is recorded and never undoes the start.
        if (image.startHooks !== false) await this.hooks.run(handle, session.id, 'on-start', { AIRLOCK_SESSION_ID: session.id, ...startEnvironment(contract) });
        return started;
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
    return this.locks.exclusive(id, () => this.hibernation.suspend(this.get(id), reason));
  }

  /** Restores a suspended (or thaws a paused) machine where it stopped. */
  async resume(id: string): Promise<SessionRecord> {
    return this.locks.exclusive(id, () => this.hibernation.resume(this.get(id)));
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
      // Only the depths the session's driver can reach (the sleeper checks too; this is the authority).
      const { capabilities } = this.driverOf(session);
      if (depth === 'suspended') return capabilities.snapshot && (session.state === 'running' || session.state === 'paused') ? this.hibernation.suspend(session, 'idle') : undefined;
      return capabilities.pause && session.state === 'running' ? this.pauseLocked(session, 'idle') : undefined;
    });
  }

  private async pauseLocked(session: SessionRecord, reason: 'manual' | 'idle'): Promise<SessionRecord> {
    requireMachine(session, 'pause');
    assertTransition(session, 'pause');
    requireCapability(this.driverOf(session), 'pause', 'pause a machine in place', session.id);
    await this.drivers.forHandle(machineHandle(session)).pause(machineHandle(session));
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
        requireCallable(session);
        if (session.state !== 'running' || !session.sandbox) return undefined;
        const resumeMs = slept ? Date.now() - begun : 0;
        this.usage.touch(session.id);
        let result: T;
        try {
          result = await work(session.sandbox, session);
        } catch (error) {
          if (isAirlockError(error, 'SANDBOX_DIED')) this.recordDeath(session, error);
          throw error;
        }
        // idleness counts from the end of the last call, not its start
        this.usage.touch(session.id);
        return { result, resumeMs };
      });
      if (outcome) return outcome;
      slept = true;
      await this.locks.exclusive(id, async () => {
        const session = this.get(id);
        requireCallable(session);
        if (session.state === 'suspended' || session.state === 'paused') await this.hibernation.resume(session);
      });
    }
  }

  /**
   * Marks a session whose machine died under a call as failed, so that it
   * says so and later calls are refused with the cause instead of failing
   * one by one. The handle stays: terminate cleans up what runsc left.
   */
  private recordDeath(session: SessionRecord, error: AirlockError): void {
    const fresh = this.get(session.id);
    if (fresh.state === 'failed' || fresh.state === 'terminated') return;
    this.commit(fresh, { state: 'failed', pendingOperation: null, failure: { code: error.code, message: error.message } }, 'session.failed', {
      operation: 'call',
      code: error.code,
      message: error.message,
    });
  }

  /**
   * Runs one command in a fresh sandbox over the session's disk (per-call
   * mode, or an ephemeral call of a machine session).
   */
  async runEphemeral(id: string, request: Omit<ExecRequest, 'argv'> & { argv: string[] }): Promise<ExecOutcome> {
    return this.withEphemeralSpec(id, 'run the command on the machine (without --ephemeral)', async (spec, driver) => {
      const outcome = await driver.runOnce({ ...spec, oneShot: { argv: request.argv } }, request);
      this.usage.chargePerCall(id, outcome.durationMs);
      return outcome;
    });
  }

  /**
   * Runs `work` on a throw-away sandbox over the session's disk (file calls of
   * per-call sessions and of failed ones), destroyed afterwards.
   */
  async withScratchSandbox<T>(id: string, work: (handle: SandboxHandle) => Promise<T>): Promise<T> {
    return this.withEphemeralSpec(id, 'work on its files through the machine', async (spec, driver) => {
      const handle = await driver.start({ ...spec, scratch: true });
      try {
        return await work(handle);
      } finally {
        await driver.destroy(handle);
      }
    });
  }

  /**
   * A spec for a fresh sandbox over the session's disk, under the shared
   * lock, so it never sees a disk in the middle of a suspend. A failed
   * session whose disk is kept still gets one: it is how its files are
   * recovered. `instead` says what to do when the disk is the machine's alone.
   */
  private async withEphemeralSpec<T>(id: string, instead: string, work: (spec: SandboxSpec, driver: SandboxDriver) => Promise<T>): Promise<T> {
    return this.locks.shared(id, async () => {
      const session = this.get(id);
      const recoverable = session.state === 'failed' && (await this.disks.list()).includes(session.id);
      if ((session.state === 'creating' || session.state === 'terminated' || session.state === 'failed') && !recoverable) {
        requireCallableState(session);
      }
      const driver = this.driverOf(session);
      const run = async (): Promise<T> => {
        const image = await this.images.get(session.imageName);
        const spec = await this.specFor(session, image, newId('c').slice(2, 12));
        this.usage.touch(session.id);
        return work(spec, driver);
      };
      if (driver.capabilities.sharedDisk) return run();
      // A block-device disk has one user at a time: never beside the session's machine (whose kernel caches
      // it, suspended or not), and per-call sandboxes one after another.
      if (session.mode === 'machine' && session.state !== 'failed') {
        throw new AirlockError('INVALID_STATE', `session ${id} runs on the ${driver.name} driver, whose machine holds the session disk: ${instead}`, {
          details: { sessionId: id, driver: driver.name },
        });
      }
      return this.locks.exclusive(`${id}#disk`, run);
    });
  }

  /** Resets the runaway breaker (a human decided the agent may go on). */
  resetGuard(id: string, by: string): SessionRecord {
    const session = this.get(id);
    const tripped = session.guard.tripped;
    return this.commit(session, { guard: emptyGuard() }, 'guard.reset', { by, wasTripped: tripped !== null, callKey: tripped?.callKey ?? null });
  }

  private async sanitize(session: SessionRecord): Promise<void> {
    if (session.sandbox) await this.drivers.forHandle(session.sandbox).destroy(session.sandbox);
    // Sandboxes the record never held (a start that failed half-way, a crash before the handle was stored).
    const driver = this.driverOf(session);
    for (const leftover of await driver.list()) {
      if (leftover.sessionId === session.id) await driver.destroy({ sandboxId: leftover.sandboxId, sessionId: session.id, driver: driver.name, driverData: {} });
    }
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

  /** Builds the driver spec for the session's next sandbox incarnation (or a per-call sandbox, given its nonce). */
  async specFor(session: SessionRecord, image: ImageRecord, perCallNonce?: string): Promise<SandboxSpec> {
    const driver = this.driverOf(session);
    const sandboxId = driver.sandboxIdFor(
      perCallNonce === undefined
        ? { sessionId: session.id, purpose: 'machine', generation: session.generation }
        : { sessionId: session.id, purpose: 'per-call', nonce: perCallNonce },
    );
    const disk = await this.diskVolume(driver, session.id);
    const rootfs: SandboxVolume =
      driver.volumes.rootfs === 'directory' ? { kind: 'directory', path: image.rootfsDir } : { kind: 'block-device', path: await this.images.rootfsBlockDevice(image.name) };
    const net = await this.networks?.prepare(session, image);
    return {
      sandboxId,
      sessionId: session.id,
      rootfs,
      disk,
      stateDir: this.layout.sandboxStateDir(sandboxId),
      hostname: session.id.replace(/_/g, '-'),
      resources: session.resources,
      env: net ? { ...image.env, ...net.env } : image.env,
      ...(net ? { network: net.network } : {}),
    };
  }

  /** The session disk in the form the driver takes: mounted on the host, or unmounted for a VM to attach. */
  async diskVolume(driver: SandboxDriver, sessionId: string): Promise<SandboxVolume> {
    return driver.volumes.disk === 'directory'
      ? { kind: 'directory', path: await this.disks.ensureMounted(sessionId) }
      : { kind: 'block-device', path: await this.disks.blockDevice(sessionId) };
  }

  /** Records that an operation is in flight before it touches the sandbox. */
  mark(session: SessionRecord, operation: LifecycleOperation, data: Record<string, unknown> = {}): void {
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
}

/** The driver a new session asks for: the request's, else the contract's `sandbox`; both given must agree. */
function chooseDriver(input: CreateSessionInput, fallback: string): string {
  const fromContract = (input.contract as { sandbox?: string }).sandbox;
  if (input.sandbox !== undefined && fromContract !== undefined && input.sandbox !== fromContract) {
    throw new AirlockError('INVALID_ARGUMENTS', `the contract asks for sandbox ${fromContract} and the request for ${input.sandbox}; give one of them, or the same in both`, {
      details: { field: 'sandbox' },
    });
  }
  return input.sandbox ?? fromContract ?? fallback;
}

/** What the driver runs sandboxes with, for the audit log; nothing when it cannot say (never fatal). */
async function runtimeOf(driver: SandboxDriver): Promise<Record<string, string>> {
  return (await driver.describeRuntime?.().catch(() => undefined)) ?? {};
}

/** What on-start hooks learn from the contract: the display size a desktop image starts with. */
function startEnvironment(contract: SessionContract): Record<string, string> {
  const { width, height } = desktopSize({ contract: contract as unknown as Record<string, unknown> });
  return { AIRLOCK_DESKTOP_WIDTH: String(width), AIRLOCK_DESKTOP_HEIGHT: String(height) };
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
