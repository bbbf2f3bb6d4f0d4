/**
 * The session service: lifecycle of session machines (create, suspend,
 * resume, pause, terminate) and running work on them. Every state change is
 * a transition asked of `SessionRecords` (the only writer of state), recorded
 * before and after it touches the sandbox, so that a crash at any point
 * leaves a session that the reconciler can bring back to a resumable state.
 */
import { AirlockError, isAirlockError, toAirlockError } from './errors.js';
import type { ExecOutcome, ExecRequest, SandboxDriver, SandboxHandle, SandboxResources, SandboxSpec } from './sandbox-driver.js';
import { requireCapability, type SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { ImageCatalog } from './image-catalog.js';
import type { SessionContract } from './session-contract.js';
import type { SessionNetworks } from './session-networks.js';
import type { SessionRecords } from './session-records.js';
import type { SandboxSpecs } from './sandbox-specs.js';
import type { SnapshotDisposal } from './snapshot-disposal.js';
import type { Store } from './store.js';
import type { MachineHibernation, WakeReason } from './machine-hibernation.js';
import type { UsageMeter } from './usage-meter.js';
import type { WarmPool } from './warm-pool.js';
import { startEnvironment, type LifecycleHooks } from './lifecycle-hooks.js';
import { MachineRestarts } from './machine-restarts.js';
import { newId } from './ids.js';
import { type SessionLocks } from './session-locks.js';
import { assertTransition } from './session-transitions.js';
import {
  emptyGuard,
  machineHandle,
  requireCallable,
  requireCallableState,
  requireMachine,
  requireOwned,
  newSessionRecord,
  type ExecutionMode,
  type SessionRecord,
  type SessionState,
} from './session.js';

/** Collaborators of the session service. */
export interface SessionServiceDeps {
  store: Store;
  records: SessionRecords;
  /** the drivers sessions may run on; a session keeps its driver for life */
  drivers: SandboxDrivers;
  disks: SessionDisks;
  images: ImageCatalog;
  specs: SandboxSpecs;
  hibernation: MachineHibernation;
  disposal: SnapshotDisposal;
  usage: UsageMeter;
  locks: SessionLocks;
  /** on-start hooks (the desktop image starts its display there) */
  hooks: LifecycleHooks;
  /** networks of sessions whose contract has a `network` section; without it such sessions get none */
  networks?: SessionNetworks | undefined;
  /** machines started ahead of time; without it every machine starts cold */
  pool?: WarmPool | undefined;
}

/** What `create` needs. */
export interface CreateSessionInput {
  imageName?: string;
  contract: SessionContract;
  mode?: ExecutionMode;
  /** the sandbox driver by name (`gvisor`, `microvm`); default: the contract's `sandbox`, else the server's default */
  sandbox?: string;
  /** who asked (a token's name), recorded in the audit */
  by?: string;
}

/** The default image sessions start from. */
export const DEFAULT_IMAGE = 'debian-bookworm';

/** Lifecycle of sessions. */
export class SessionService {
  readonly locks: SessionLocks;
  /** activity, resource samples and per-call time of sessions */
  readonly usage: UsageMeter;
  /** the only writer of session records */
  readonly records: SessionRecords;
  /** the drivers of sessions, by name */
  readonly drivers: SandboxDrivers;
  private readonly deps: SessionServiceDeps;
  private readonly restarts: MachineRestarts;

  constructor(deps: SessionServiceDeps) {
    this.deps = deps;
    this.restarts = new MachineRestarts(deps);
    this.locks = deps.locks;
    this.usage = deps.usage;
    this.records = deps.records;
    this.drivers = deps.drivers;
  }

  /** The driver of a session's machines. */
  driverOf(session: Pick<SessionRecord, 'driver'>): SandboxDriver {
    return this.drivers.forSession(session);
  }

  /** The server this process speaks for. */
  get owner(): string {
    return this.records.owner;
  }

  /** The session, or SESSION_NOT_FOUND. */
  async get(id: string): Promise<SessionRecord> {
    return this.records.get(id);
  }

  /** Sessions, newest last (of every server sharing the store). */
  async list(states?: SessionState[]): Promise<SessionRecord[]> {
    return this.records.list(states ? { states } : {});
  }

  /** The session, or SESSION_NOT_FOUND / SESSION_NOT_OWNED when another server manages it. */
  async getOwned(id: string): Promise<SessionRecord> {
    const session = await this.records.get(id);
    requireOwned(session, this.owner);
    return session;
  }

  /** Creates a session and starts its machine (per-call sessions only get their disk). */
  async create(input: CreateSessionInput): Promise<SessionRecord> {
    const { images, disks, drivers, specs, networks, records } = this.deps;
    const driver = drivers.get(chooseDriver(input, drivers.default.name));
    const image = await images.get(input.imageName ?? DEFAULT_IMAGE);
    const contract = input.contract;
    const resources = resourcesOf(contract);
    const mode = input.mode ?? 'machine';
    const session = newSessionRecord(
      newId('ses'),
      {
        owner: this.owner,
        mode,
        tenant: contract.identity.tenant,
        principal: contract.identity.principal,
        imageName: image.name,
        imageDigest: image.digest,
        contractVersion: 1,
        contract,
        resources,
        generation: mode === 'per-call' ? 0 : 1,
        lineage: null,
        driver: driver.name,
      },
      records.now().toISOString(),
    );
    await records.insert(session, {
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
        ...(input.by === undefined ? {} : { by: input.by }),
      },
    });
    return this.locks.exclusive(session.id, async () => {
      try {
        // A warm machine (its disk moved under this session, its identity fresh) when the pool has one of this class.
        const warm = session.mode === 'machine' ? await this.deps.pool?.claim(session, image) : undefined;
        if (!warm) await disks.create(session.id, resources.diskMb);
        if (session.mode === 'per-call') {
          return await records.transition(session.id, 'start', { type: 'session.started', data: { mode: 'per-call' } });
        }
        const handle = warm?.handle ?? (await driver.start(await specs.specFor(session, image)));
        const fromPool = warm ? { warmPool: warm.poolId, claimMs: warm.claimMs } : {};
        const started = await records.transition(
          session.id,
          'start',
          {
            type: 'session.started',
            data: { sandboxId: handle.sandboxId, driver: driver.name, imageDigest: image.digest, ...fromPool, ...(await runtimeOf(driver)) },
          },
          { sandbox: handle },
        );
        // After the commit, like on-resume: a failing hook is recorded and never undoes the start.
        if (image.startHooks !== false)
          await this.deps.hooks.run(handle, session.id, 'on-start', { AIRLOCK_SESSION_ID: session.id, ...startEnvironment(contract) });
        return started;
      } catch (error) {
        const failure = toAirlockError(error, 'DRIVER_FAILED');
        await disks.destroy(session.id).catch(() => undefined);
        await networks?.release(session.id).catch(() => undefined);
        await records.transition(
          session.id,
          'fail',
          { type: 'session.failed', data: { operation: 'create', code: failure.code, message: failure.message } },
          { failure: { code: failure.code, message: failure.message } },
        );
        throw failure;
      }
    });
  }

  /** Checkpoints the machine's memory and processes and stops it; the disk stays. */
  async suspend(id: string, reason: 'manual' | 'idle' | 'drain' = 'manual', by?: string): Promise<SessionRecord> {
    await this.getOwned(id);
    return this.locks.exclusive(id, async () => this.deps.hibernation.suspend(await this.get(id), reason, by));
  }

  /** Restores a suspended (or thaws a paused) machine where it stopped. */
  async resume(id: string): Promise<SessionRecord> {
    await this.getOwned(id);
    return this.locks.exclusive(id, async () => this.deps.hibernation.resume(await this.get(id), { reason: 'manual' }));
  }

  /**
   * Starts a fresh machine on the session's disk in place of the one it has
   * (running, paused, degraded) or had (failed): files kept, processes lost.
   */
  async restart(id: string, by = 'api'): Promise<SessionRecord> {
    await this.getOwned(id);
    return this.locks.exclusive(id, async () => this.restarts.restart(await this.get(id), by));
  }

  /** Freezes the machine in place: no CPU, memory kept. */
  async pause(id: string, reason: 'manual' | 'idle' = 'manual', by?: string): Promise<SessionRecord> {
    await this.getOwned(id);
    return this.locks.exclusive(id, async () => this.pauseLocked(await this.get(id), reason, by));
  }

  /**
   * Puts an idle machine to sleep (the idle sleeper's entry point). Takes the
   * exclusive lock, so it waits for calls in flight, and then asks `stillIdle`
   * again: a call that slipped in before the lock cancels the sleep.
   */
  async sleepIfIdle(id: string, depth: 'paused' | 'suspended', stillIdle: (session: SessionRecord) => boolean): Promise<SessionRecord | undefined> {
    return this.locks.exclusive(id, async () => {
      const session = await this.get(id);
      if (session.owner !== this.owner || session.mode !== 'machine' || session.pendingOperation || !stillIdle(session)) return undefined;
      // Only the depths the session's driver can reach (the sleeper checks too; this is the authority).
      const { capabilities } = this.driverOf(session);
      if (depth === 'suspended') {
        return capabilities.snapshot && (session.state === 'running' || session.state === 'paused')
          ? this.deps.hibernation.suspend(session, 'idle')
          : undefined;
      }
      return capabilities.pause && session.state === 'running' ? this.pauseLocked(session, 'idle') : undefined;
    });
  }

  private async pauseLocked(session: SessionRecord, reason: 'manual' | 'idle', by?: string): Promise<SessionRecord> {
    requireMachine(session, 'pause');
    assertTransition(session, 'pause');
    requireCapability(this.driverOf(session), 'pause', 'pause a machine in place', session.id);
    const driver = this.drivers.forHandle(machineHandle(session));
    await driver.pause(machineHandle(session));
    try {
      return await this.records.transition(session.id, 'pause', { type: 'session.paused', data: { reason, ...(by === undefined ? {} : { by }) } });
    } catch (error) {
      // Not recorded (the store is down): the machine must not stay frozen under a record that says it runs.
      await driver.unpause(machineHandle(session)).catch(() => undefined);
      throw error;
    }
  }

  /** Destroys the machine, its disk and every snapshot of it; keeps metadata and history. */
  async terminate(id: string, by?: string): Promise<SessionRecord> {
    await this.getOwned(id);
    return this.locks.exclusive(id, async () => {
      const session = await this.get(id);
      if (session.state === 'terminated') return session;
      const marked = await this.records.transition(id, 'begin-terminate', { type: 'session.terminate-started', data: {} });
      await this.sanitize(marked);
      await this.deps.networks?.release(session.id);
      return this.records.transition(
        id,
        'finish-terminate',
        { type: 'session.terminated', data: { sanitized: ['sandbox', 'disk', 'memory-images'], ...(by === undefined ? {} : { by }) } },
        { sandbox: null, resumeSnapshotId: null },
      );
    });
  }

  /**
   * Runs `work` with the session's machine running, waking it first if it
   * sleeps (the wake is audited with `reason`, e.g. the call that needed it).
   * Holds the shared lock, so no suspend can start meanwhile. Returns how
   * long the machine's sleep delayed the work: waiting for a pause or
   * suspend in progress plus the wake-up (0 when it was running).
   */
  async withMachine<T>(
    id: string,
    work: (handle: SandboxHandle, session: SessionRecord) => Promise<T>,
    reason: WakeReason = { reason: 'call' },
  ): Promise<{ result: T; resumeMs: number }> {
    const begun = Date.now();
    let slept = false;
    for (;;) {
      const outcome = await this.locks.shared(id, async () => {
        const session = await this.getOwned(id);
        requireCallable(session);
        if (session.state !== 'running' || !session.sandbox) return undefined;
        const resumeMs = slept ? Date.now() - begun : 0;
        try {
          return { result: await work(session.sandbox, session), resumeMs };
        } catch (error) {
          if (isAirlockError(error, 'SANDBOX_DIED')) await this.recordDeath(session.id, error);
          if (isAirlockError(error, 'SANDBOX_NOT_ANSWERING')) await this.restarts.checkAfterSilence(session, session.sandbox, error);
          throw error;
        } finally {
          // Still under the lock: idleness counts from the end of the work, before anyone may put the machine to sleep.
          this.usage.markActive(id);
        }
      });
      if (outcome) return outcome;
      slept = true;
      await this.locks.exclusive(id, async () => {
        const session = await this.get(id);
        requireCallable(session);
        if (session.state === 'suspended' || session.state === 'paused') await this.deps.hibernation.resume(session, reason);
      });
    }
  }

  /**
   * Marks a session whose machine died under a call as failed, so that it
   * says so and later calls are refused with the cause instead of failing
   * one by one. The handle stays: terminate cleans up what runsc left.
   */
  private async recordDeath(id: string, error: AirlockError): Promise<void> {
    const fresh = await this.get(id);
    if (fresh.state === 'failed' || fresh.state === 'terminated') return;
    await this.records.transition(
      id,
      'fail',
      { type: 'session.failed', data: { operation: 'call', code: error.code, message: error.message } },
      { failure: { code: error.code, message: error.message } },
    );
  }

  /**
   * Runs one command in a fresh sandbox over the session's disk (per-call
   * mode, or an ephemeral call of a machine session).
   */
  async runEphemeral(id: string, request: Omit<ExecRequest, 'argv'> & { argv: string[] }): Promise<ExecOutcome> {
    return this.withEphemeralSpec(id, 'run the command on the machine (without --ephemeral)', async (spec, driver) => {
      const outcome = await driver.runOnce({ ...spec, oneShot: { argv: request.argv } }, request);
      await this.usage.chargePerCall(id, outcome.durationMs);
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
    const { disks, images, specs } = this.deps;
    return this.locks.shared(id, async () => {
      const session = await this.getOwned(id);
      const recoverable = session.state === 'failed' && (await disks.list()).includes(session.id);
      if ((session.state === 'creating' || session.state === 'terminated' || session.state === 'failed') && !recoverable) {
        requireCallableState(session);
      }
      const driver = this.driverOf(session);
      const run = async (): Promise<T> => {
        const image = await images.get(session.imageName);
        const spec = await specs.specFor(session, image, newId('c').slice(2, 12));
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
  async resetGuard(id: string, by: string): Promise<SessionRecord> {
    return this.records.update(
      id,
      () => ({ guard: emptyGuard() }),
      (_next, fresh) => ({ type: 'guard.reset', data: { by, wasTripped: fresh.guard.tripped !== null, callKey: fresh.guard.tripped?.callKey ?? null } }),
    );
  }

  private async sanitize(session: SessionRecord): Promise<void> {
    const { disks, store, disposal } = this.deps;
    if (session.sandbox) await this.drivers.forHandle(session.sandbox).destroy(session.sandbox);
    // Sandboxes the record never held (a start that failed half-way, a crash before the handle was stored).
    const driver = this.driverOf(session);
    for (const leftover of await driver.list()) {
      if (leftover.sessionId === session.id)
        await driver.destroy({ sandboxId: leftover.sandboxId, sessionId: session.id, driver: driver.name, driverData: {} });
    }
    await disks.destroy(session.id);
    for (const snapshot of await store.listSnapshots({ sessionId: session.id })) {
      if (!snapshot.deletedAt) await disposal.drop(snapshot.id, 'session-terminated');
    }
  }
}

/** The driver a new session asks for: the request's, else the contract's `sandbox`; both given must agree. */
function chooseDriver(input: CreateSessionInput, fallback: string): string {
  const fromContract = (input.contract as { sandbox?: string }).sandbox;
  if (input.sandbox !== undefined && fromContract !== undefined && input.sandbox !== fromContract) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `the contract asks for sandbox ${fromContract} and the request for ${input.sandbox}; give one of them, or the same in both`,
      {
        details: { field: 'sandbox' },
      },
    );
  }
  return input.sandbox ?? fromContract ?? fallback;
}

/** What the driver runs sandboxes with, for the audit log; nothing when it cannot say (never fatal). */
async function runtimeOf(driver: SandboxDriver): Promise<Record<string, string>> {
  return (await driver.describeRuntime?.().catch(() => undefined)) ?? {};
}

/** Resources of a session from its contract, with defaults. */
export function resourcesOf(contract: SessionContract): SandboxResources {
  const declared: Partial<SandboxResources> = contract.resources;
  return {
    cpus: declared.cpus ?? 1,
    memoryMb: declared.memoryMb ?? 512,
    diskMb: declared.diskMb ?? 2048,
    maxProcesses: declared.maxProcesses ?? 256,
  };
}
