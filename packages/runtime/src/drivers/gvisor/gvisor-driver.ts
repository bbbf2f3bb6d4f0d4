/**
 * The gVisor (runsc) sandbox driver: one user-space-kernel machine per
 * session, with its writable root layer and /workspace on the session disk.
 * The machine's first process is the agent (packages/runtime/agent,
 * docs/agent-protocol.md): every command, file operation, port relay and
 * identity change goes through it over one host Unix socket, so no call
 * spawns `runsc exec`. See `sandbox-agents.ts` (the connections),
 * `rootfs-view.ts` (why the image is mounted read-only) and `cgroups.ts`.
 */
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { AirlockError } from '../../core/errors.js';
import type {
  CheckpointResult,
  DriverCapabilities,
  DriverVolumes,
  ExecOutcome,
  ExecRequest,
  SandboxDriver,
  SandboxHandle,
  SandboxHealth,
  SandboxIdentity,
  SandboxListing,
  SandboxProcess,
  SandboxPurpose,
  SandboxResources,
  SandboxSpec,
  SandboxTerminal,
  SandboxUsage,
  SandboxVolume,
  TerminalRequest,
} from '../../core/sandbox-driver.js';
import type { SandboxFiles } from '../../core/sandbox-files.js';
import { sandboxFilesOver } from '../agent/agent-files.js';
import { checkExecRequest, execThroughAgent } from '../agent/agent-exec.js';
import { openPortStream } from '../agent/agent-port-stream.js';
import { applyIdentity, listProcesses, signalProcess } from '../agent/agent-system.js';
import { openTerminal } from '../agent/agent-terminal.js';
import { defaultAgentBinary } from './agent-binary.js';
import { freeze, isFrozen, readUsage, removeCgroups, thaw, writeLimits } from './cgroups.js';
import { checkGvisorHost } from './host-check.js';
import { ensureSkeleton } from './rootfs-view.js';
import { liveStatus, Runsc, runscFailure } from './runsc.js';
import { SandboxAgents } from './sandbox-agents.js';
import {
  hostProcessesOf,
  isProcessAlive,
  logTail,
  orphanedInvocations,
  prepareSandboxFiles,
  removeSandboxFiles,
  sandboxPaths,
  directorySpec,
  validateSpec,
  type DirectorySpec,
  type PreparedSandbox,
} from './sandbox-files.js';
import { requireAgentImage, RULE_MOUNTS } from './sandbox-markers.js';
import { NETSTACK_WRAPPER, SandboxNetworks } from './sandbox-network.js';
import { SandboxRegistry } from './sandbox-registry.js';
import { CONTAINER_PREFIX, containerIdOf, handleData, storedHandleData, type GvisorHandleData } from './gvisor-handle.js';
import { checkpointSandbox } from './sandbox-checkpoint.js';
import { SandboxTeardowns } from '../../core/sandbox-teardowns.js';
import { sandboxDeath } from './sandbox-death.js';

/** Options of the gVisor driver. */
export interface GvisorDriverOptions {
  /** driver-owned host directory: runsc's `--root` and the rootfs skeleton live here */
  stateRoot: string;
  /** default /usr/bin/runsc */
  runscPath?: string;
  /** the agent binary on the host, bind-mounted read-only into every sandbox; default: the one `make` builds in dist/agent */
  agentHostPath?: string;
  /** runsc platform; default systrap. kvm is refused: it hangs on this host kind. */
  platform?: 'systrap' | 'ptrace';
  /**
   * Where the control plane puts sandbox state dirs (`SandboxSpec.stateDir`), when they share one
   * parent: `list()` then also reports a state dir that no registered sandbox owns (left by a
   * version without the registry), so reconciliation removes it.
   */
  sandboxesDir?: string;
}

/** How long start-up waits for a checkpoint a crashed control plane left running to end by itself. */
const ORPHANED_CHECKPOINT_WAIT_MS = 120_000;

/** Waits until `pid` has ended, or `timeoutMs` has passed. */
async function waitForExit(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && (await isProcessAlive(pid))) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Processes the agent may start above the session's RLIMIT_NPROC, so a fork bomb never locks it out. */
export const NPROC_RESERVE = 64;
/** How long a fresh sandbox's agent has to say hello. */
const START_TIMEOUT_MS = 15_000;

/** The SandboxDriver over gVisor's runsc. */
export class GvisorDriver implements SandboxDriver {
  readonly specificationVersion = 'v2' as const;
  readonly name = 'gvisor';
  readonly capabilities: DriverCapabilities = { snapshot: true, fork: true, network: true, resize: true, pause: true, sharedDisk: true, terminal: true };
  readonly volumes: DriverVolumes = { rootfs: 'directory', disk: 'directory' };
  readonly files: SandboxFiles;

  private readonly runsc: Runsc;
  private readonly stateRoot: string;
  private readonly agentHostPath: string;
  private readonly platform: 'systrap' | 'ptrace';
  private readonly networks: SandboxNetworks;
  private readonly agents: SandboxAgents;
  private readonly registry: SandboxRegistry;
  /** the `runsc run` of each scratch sandbox, which ends with it */
  private readonly foreground = new Map<string, Promise<number>>();
  private readonly sandboxesDir: string | undefined;
  /** one-shot sandboxes being destroyed after their command answered */
  private readonly teardowns = new SandboxTeardowns();

  constructor(options: GvisorDriverOptions) {
    if ((options.platform as string | undefined) === 'kvm') {
      throw new AirlockError('INVALID_ARGUMENTS', 'runsc --platform=kvm hangs on this host kind (PVM); use systrap');
    }
    this.stateRoot = options.stateRoot;
    this.agentHostPath = options.agentHostPath ?? defaultAgentBinary();
    this.platform = options.platform ?? 'systrap';
    this.runsc = new Runsc({ binary: options.runscPath ?? '/usr/bin/runsc', stateRoot: join(options.stateRoot, 'runsc') });
    this.networks = new SandboxNetworks(options.stateRoot);
    this.registry = new SandboxRegistry(join(options.stateRoot, 'registry'));
    this.sandboxesDir = options.sandboxesDir;
    this.agents = new SandboxAgents({
      runsc: this.runsc,
      containerIdOf,
      status: (handle) => this.status(handle),
      died: (handle, status) => this.diedWithLog(handle, status),
      stateDirOf: (handle) => handleData(handle).stateDir,
    });
    this.files = sandboxFilesOver((handle) => this.agents.connectionOf(handle));
  }

  async checkHost(): Promise<void> {
    await checkGvisorHost(this.runsc, this.agentHostPath);
    await this.ensureRoots();
    // A crashed control plane leaves its runsc invocations (a checkpoint, a kill) behind: stop them
    // before anything is reconciled, so none of them changes a sandbox while it is being repaired.
    // A checkpoint is let finish instead: killing its runsc stops nothing inside the sandbox, which
    // goes on writing the image, and a host socket its agent connects meanwhile makes that checkpoint
    // panic and kill the sandbox (sandbox-checkpoint.ts).
    for (const { pid, subcommand } of await orphanedInvocations(join(this.stateRoot, 'runsc'))) {
      if (subcommand === 'checkpoint') await waitForExit(pid, ORPHANED_CHECKPOINT_WAIT_MS);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // At start-up nothing is being created: a namespace without its runsc container is a crash leftover.
    for (const sandboxId of await this.networks.list()) {
      if (!(await this.runsc.hasState(containerIdOf(sandboxId)))) await this.networks.remove(sandboxId);
    }
    await this.networks.pruneFirewall();
  }

  sandboxIdFor(purpose: SandboxPurpose): string {
    return purpose.purpose === 'machine' ? `airlock-${purpose.sessionId}-g${purpose.generation}` : `airlock-${purpose.sessionId}-run-${purpose.nonce}`;
  }

  /** Lets go of every agent listener and connection of this process; the sandboxes run on and a later driver adopts them. */
  async close(): Promise<void> {
    await this.teardowns.drain();
    await this.agents.closeAll();
  }

  async start(spec: SandboxSpec): Promise<SandboxHandle> {
    return this.launch(directorySpec(spec), undefined);
  }

  async exec(handle: SandboxHandle, request: ExecRequest): Promise<ExecOutcome> {
    checkExecRequest(request);
    const connection = await this.agents.connectionOf(handle);
    try {
      return await execThroughAgent(connection, request, { processLimit: handleData(handle).processLimit ?? 0, revive: () => this.agents.revive(handle) });
    } catch (error) {
      throw await this.explain(handle, error);
    }
  }

  /**
   * A fresh sandbox over the session disk whose agent runs the command, then
   * the sandbox is destroyed. Its root layer lives in memory: only
   * /workspace persists.
   */
  async runOnce(volumeSpec: SandboxSpec, request: Omit<ExecRequest, 'argv'>): Promise<ExecOutcome> {
    const spec = directorySpec(volumeSpec);
    const argv = spec.oneShot?.argv;
    if (!argv || argv.length === 0) throw new AirlockError('INVALID_ARGUMENTS', 'runOnce needs spec.oneShot.argv with at least one element');
    checkExecRequest({ ...request, argv });
    const begun = performance.now();
    let handle: SandboxHandle | undefined;
    try {
      handle = await this.launch({ ...spec, scratch: true }, undefined);
      const bootMs = performance.now() - begun;
      const outcome = await this.exec(handle, { ...request, argv });
      return { ...outcome, durationMs: Math.round(performance.now() - begun), startMs: Math.round(bootMs + (outcome.startMs ?? 0)) };
    } finally {
      // Off the call's path: once the command has answered, the sandbox's teardown (0.3-1.9 s of process
      // reaping and cleanup, measured) only delays the caller, unless teardowns fall behind. `close` waits
      // for them; a crash leaves an orphan that the reconciler removes.
      await this.teardowns.release(this, handle ?? this.handleOf(spec));
    }
  }

  /** See sandbox-checkpoint.ts: the agent parks, then runsc checkpoints a paused sandbox left running. */
  async checkpoint(handle: SandboxHandle, imageDir: string, options: { leaveRunning: boolean }): Promise<CheckpointResult> {
    return checkpointSandbox(
      {
        runsc: this.runsc,
        agents: this.agents,
        pause: (target) => this.pause(target),
        unpause: (target) => this.unpause(target),
        status: (target) => this.status(target),
        died: (target, status) => this.diedWithLog(target, status),
        destroy: (target) => this.destroy(target),
        stateDirOf: (target) => handleData(target).stateDir,
      },
      handle,
      containerIdOf(handle.sandboxId),
      imageDir,
      options,
    );
  }

  async restore(spec: SandboxSpec, imageDir: string): Promise<SandboxHandle> {
    if (!(await exists(join(imageDir, 'checkpoint.img')))) {
      throw new AirlockError('SNAPSHOT_NOT_FOUND', `no checkpoint image in ${imageDir}; take one with checkpoint() first`);
    }
    await requireAgentImage(imageDir);
    return this.launch(directorySpec(spec), imageDir);
  }

  /**
   * A warm pool's sandbox becomes the session's: the registry names the session (so `list()` and
   * reconciliation see whose it is) and the handle the disk's new place. The running sandbox needs no
   * change: runsc and its gofer hold the disk open, and the moved mount is the same filesystem.
   */
  async adopt(handle: SandboxHandle, to: { sessionId: string; disk: SandboxVolume }): Promise<SandboxHandle> {
    if (to.disk.kind !== 'directory') throw new AirlockError('INVALID_ARGUMENTS', `the gVisor driver takes its disk as a directory, not a ${to.disk.kind}`);
    const data = handleData(handle);
    const registered = await this.registry.get(handle.sandboxId);
    if (!registered) throw new AirlockError('INVALID_STATE', `sandbox ${handle.sandboxId} is not one this driver made; it cannot be adopted`);
    await this.registry.register({ sandboxId: handle.sandboxId, sessionId: to.sessionId, stateDir: registered.stateDir, diskDir: to.disk.path });
    const driverData: GvisorHandleData = { ...data, diskDir: to.disk.path };
    return { sandboxId: handle.sandboxId, sessionId: to.sessionId, driver: this.name, driverData: { ...driverData } };
  }

  async personalize(handle: SandboxHandle, identity: SandboxIdentity): Promise<void> {
    await applyIdentity(await this.agents.connectionOf(handle), identity);
  }

  /**
   * Freezes the whole sandbox in its freezer cgroup (the kernel stops the sentry, the gofer and every
   * stub where they are). A wake is then a write to one file (~1 ms) instead of a `runsc resume` spawn
   * (~25 ms on an idle host, measured). A sandbox without a freezer cgroup is paused by runsc.
   */
  async pause(handle: SandboxHandle): Promise<void> {
    // Frozen, then checked alive from runsc's state file: a `runsc state` spawn first cost every pause ~25 ms.
    if (await freeze(handle.sandboxId)) {
      const stored = await this.runsc.storedState(containerIdOf(handle.sandboxId));
      if (stored && (await isProcessAlive(stored.pid))) return;
      await thaw(handle.sandboxId);
      await this.requireAlive(handle);
    }
    const paused = await this.runsc.run(['pause', containerIdOf(handle.sandboxId)]);
    if (paused.code === 0) return;
    await this.requireAlive(handle);
    throw runscFailure(`pausing ${handle.sandboxId}`, paused);
  }

  async unpause(handle: SandboxHandle): Promise<void> {
    // On the wake path: thaw a frozen sandbox first, and spawn runsc only for one runsc itself paused.
    if (await thaw(handle.sandboxId)) return;
    const resumed = await this.runsc.run(['resume', containerIdOf(handle.sandboxId)]);
    if (resumed.code === 0) return;
    await this.requireAlive(handle);
    throw runscFailure(`resuming ${handle.sandboxId}`, resumed);
  }

  async resize(handle: SandboxHandle, resources: Pick<SandboxResources, 'cpus' | 'memoryMb'>): Promise<void> {
    if (!(resources.cpus > 0) || !Number.isInteger(resources.memoryMb) || resources.memoryMb < 32) {
      throw new AirlockError('INVALID_ARGUMENTS', `invalid resources ${JSON.stringify(resources)}: need cpus > 0 and memoryMb >= 32`);
    }
    await this.requireAlive(handle);
    await writeLimits(handle.sandboxId, resources);
  }

  async usage(handle: SandboxHandle): Promise<SandboxUsage> {
    // Only cgroup files: metering runs after every call and must not spawn runsc.
    return readUsage(handle.sandboxId);
  }

  async status(handle: SandboxHandle): Promise<SandboxListing['status'] | 'missing'> {
    const containerId = containerIdOf(handle.sandboxId);
    // A frozen sandbox cannot answer `runsc state`: its stored state and its process say whether it lives.
    if (await isFrozen(handle.sandboxId)) {
      const stored = await this.runsc.storedState(containerId);
      if (!stored) return 'missing';
      return (await isProcessAlive(stored.pid)) ? 'paused' : 'stopped';
    }
    const state = await this.runsc.state(containerId);
    if (!state) return 'missing';
    return liveStatus(state.status, await isProcessAlive(state.pid));
  }

  async health(handle: SandboxHandle): Promise<SandboxHealth> {
    return this.agents.health(handle);
  }

  async processes(handle: SandboxHandle): Promise<SandboxProcess[]> {
    return listProcesses(await this.agents.connectionOf(handle));
  }

  async signal(handle: SandboxHandle, pid: number, signal: string | number): Promise<void> {
    await signalProcess(await this.agents.connectionOf(handle), pid, signal);
  }

  async openTerminal(handle: SandboxHandle, request: TerminalRequest): Promise<SandboxTerminal> {
    checkExecRequest(request);
    return openTerminal(await this.agents.connectionOf(handle), request, handleData(handle).processLimit ?? 0);
  }

  async destroy(handle: SandboxHandle): Promise<void> {
    // First, and even for a handle without driverData (orphans): the sandbox loses its only link at once.
    await this.networks.remove(handle.sandboxId);
    // A frozen task cannot die (cgroup v1): a kill would wait for a thaw that never comes.
    await thaw(handle.sandboxId).catch(() => undefined);
    // A machine whose agent ends it stops by itself: its teardown is ~0.3 s instead of ~2 s for `delete -force` (measured).
    const shutDown = await this.agents.shutdown(handle.sandboxId);
    await this.agents.close(handle.sandboxId);
    const foreground = this.foreground.get(handle.sandboxId);
    this.foreground.delete(handle.sandboxId);
    if (foreground) await Promise.race([foreground, delay(shutDown ? 3_000 : 0)]);
    // A handle may come without driverData (a crash before it was stored): the registry knows the files.
    const files = storedHandleData(handle) ?? (await this.registry.get(handle.sandboxId));
    const containerId = containerIdOf(handle.sandboxId);
    // A one-shot sandbox is usually gone already (`runsc run` deletes it on exit): skip two runsc calls then.
    const state = (await this.runsc.hasState(containerId)) ? await this.runsc.state(containerId) : undefined;
    if (state && shutDown) {
      for (let waited = 0; waited < 40 && (await isProcessAlive(state.pid)); waited++) await delay(50);
    }
    if (state) {
      // delete -force kills the sandbox (paused or not) and removes runsc's state and cgroup.
      await this.runsc.run(['delete', '-force', containerId], { timeoutMs: 60_000 });
    }
    // Whatever runsc left (it may have been killed itself): processes, state files, cgroups, mounts.
    const markers = files ? [containerId, join(files.stateDir, 'bundle')] : [containerId];
    for (const pid of [...(await hostProcessesOf(markers)), ...(state && state.pid > 0 ? [state.pid] : [])]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (let waited = 0; waited < 100 && (await hostProcessesOf(markers)).length > 0; waited++) await delay(100);
    await this.runsc.removeLeftState(containerId);
    await removeCgroups(handle.sandboxId);
    if (files) await removeSandboxFiles(files.stateDir);
    else if (this.sandboxesDir) await removeSandboxFiles(join(this.sandboxesDir, handle.sandboxId));
    await this.registry.remove(handle.sandboxId);
  }

  async connect(handle: SandboxHandle, port: number): Promise<Duplex> {
    return openPortStream(await this.agents.connectionOf(handle), port);
  }

  async list(): Promise<SandboxListing[]> {
    await this.ensureRoots();
    const listings = new Map<string, SandboxListing>();
    for (const state of await this.runsc.list()) {
      if (!state.id.startsWith(CONTAINER_PREFIX)) continue;
      const sandboxId = state.id.slice(CONTAINER_PREFIX.length);
      const status = liveStatus(state.status, await isProcessAlive(state.pid));
      listings.set(sandboxId, { sandboxId, status: status === 'running' && (await isFrozen(sandboxId)) ? 'paused' : status });
    }
    // Begun but never (or no longer) known to runsc: a crash between the first host change and `runsc run`.
    const leftovers = [...(await this.registry.list()), ...(await this.networks.list()), ...(await this.unregisteredStateDirs())];
    for (const sandboxId of leftovers) {
      if (!listings.has(sandboxId)) listings.set(sandboxId, { sandboxId, status: 'stopped' });
    }
    for (const listing of listings.values()) {
      const sessionId = (await this.registry.get(listing.sandboxId))?.sessionId ?? sessionIdFromName(listing.sandboxId);
      if (sessionId) listing.sessionId = sessionId;
    }
    return [...listings.values()];
  }

  /** State dirs under `sandboxesDir` that no registry entry accounts for. */
  private async unregisteredStateDirs(): Promise<string[]> {
    if (!this.sandboxesDir) return [];
    const registered = new Set(await this.registry.list());
    const names = await readdir(this.sandboxesDir).catch(() => [] as string[]);
    return names.filter((name) => !registered.has(name) && /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name));
  }

  /** Records the sandbox before any of its host state exists, so a crash leaves it findable. */
  private async register(spec: DirectorySpec): Promise<void> {
    await this.registry.register({ sandboxId: spec.sandboxId, sessionId: spec.sessionId, stateDir: spec.stateDir, diskDir: spec.diskDir });
  }

  /** Starts a long-lived sandbox, fresh (`run`) or from an image (`restore`). */
  private async launch(spec: DirectorySpec, imageDir: string | undefined): Promise<SandboxHandle> {
    validateSpec(spec);
    await this.ensureRoots();
    const handle = this.handleOf(spec);
    const containerId = containerIdOf(spec.sandboxId);
    // runsc's state files, not `runsc state`: a spawn of runsc here cost every start and restore 20-80 ms (measured).
    if ((await this.registry.get(spec.sandboxId)) || (await this.runsc.hasState(containerId))) {
      throw new AirlockError('INVALID_STATE', `sandbox ${spec.sandboxId} already exists; use a new sandboxId for every start or restore`);
    }
    try {
      await this.register(spec);
      const netnsPath = await this.attachNetwork(spec);
      const paths = await prepareSandboxFiles({
        spec,
        ...(netnsPath === undefined ? {} : { netnsPath }),
        skeletonDir: this.skeletonDir(),
        agentHostPath: this.agentHostPath,
        env: spec.env,
        processLimit: spec.resources.maxProcesses + NPROC_RESERVE,
        // A restore needs the mounts its image was taken with: an image from before the rule mounts gets none.
        ruleMounts: imageDir === undefined || (await RULE_MOUNTS.isIn(imageDir)),
      });
      // Listening before runsc starts: the agent connects as soon as it runs.
      await this.agents.open(spec.sandboxId, spec.stateDir);
      const doing = imageDir ? `restoring ${spec.sandboxId} from ${imageDir}` : `starting ${spec.sandboxId}`;
      // A scratch sandbox keeps its root layer in memory: thrown away with it.
      const scratch = (spec.scratch === true || spec.oneShot !== undefined) && imageDir === undefined;
      const flags = this.launchFlags(paths, scratch ? 'root:memory' : `root:dir=${paths.overlayDir}`, netnsPath !== undefined);
      const logged = { logPath: paths.logPath, cwd: paths.bundleDir, ...(netnsPath === undefined ? {} : { wrapper: NETSTACK_WRAPPER }) };
      if (scratch) {
        // Foreground `runsc run`: once the agent ends the machine, runsc tears it down in ~40 ms,
        // where a detached sandbox takes 1.2-1.7 s to go (measured); a scratch machine lives seconds.
        const { exited } = await this.runsc.startWithLog([...flags, 'run', `--bundle=${paths.bundleDir}`, containerId], logged);
        this.foreground.set(spec.sandboxId, exited);
        const failed = exited.then(async (code) => Promise.reject(runscFailure(doing, { code, stdout: '', stderr: await logTail(paths.logPath) })));
        await Promise.race([this.agents.first(handle, START_TIMEOUT_MS, 2_000), failed]);
        return handle;
      }
      const command = imageDir
        ? ['restore', `--image-path=${imageDir}`, '--detach', `--bundle=${paths.bundleDir}`, containerId]
        : ['run', '--detach', `--bundle=${paths.bundleDir}`, containerId];
      const result = await this.runsc.runWithLog([...flags, ...command], logged);
      if (result.code !== 0) throw runscFailure(doing, { ...result, stderr: await logTail(paths.logPath) });
      // A restored agent wakes by itself (its wait returns EINTR, measured); SIGUSR1 after a short grace in case it does not.
      await this.agents.first(handle, START_TIMEOUT_MS, imageDir ? 50 : 2_000);
      return handle;
    } catch (error) {
      await this.destroy(handle).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Flags of `run` and `restore`: the network (none, or gVisor's own stack in the sandbox's
   * namespace, see sandbox-network.ts), host sockets, the root layer's overlay, the platform.
   * A sandbox with rule mounts has its files served by the gofer (`--directfs=false`): with directfs,
   * runsc 20240729 truncates a file of a read-only bind mount on `open(O_TRUNC)` before it answers
   * EROFS (measured: `: > file` emptied it); the gofer refuses the open on the host side, and keeps
   * refusing writes even if the mount were made writable inside. Sandboxes without rules keep directfs.
   * No process may change the mounts: the agent installs a seccomp filter after its own boot mounts
   * (agent/src/seccomp.c), which every process it starts inherits.
   */
  private launchFlags(paths: PreparedSandbox, overlay: string, networked = false): string[] {
    return [
      networked ? '--network=sandbox' : '--network=none',
      // the agent may connect out to its host socket (and only it can reach that socket's directory)
      '--host-uds=open',
      `--overlay2=${overlay}`,
      ...(paths.hasRuleMounts ? ['--directfs=false'] : []),
      `--platform=${this.platform}`,
      `--panic-log=${paths.panicLogPath}`,
    ];
  }

  /** Builds the sandbox's namespace when its spec asks for a network; its path for the OCI spec. */
  private async attachNetwork(spec: SandboxSpec): Promise<string | undefined> {
    if (!spec.network) return undefined;
    return (await this.networks.create(spec.sandboxId, spec.network)).netnsPath;
  }

  private handleOf(spec: DirectorySpec): SandboxHandle {
    const driverData: GvisorHandleData = { stateDir: spec.stateDir, diskDir: spec.diskDir, processLimit: spec.resources.maxProcesses };
    return { sandboxId: spec.sandboxId, sessionId: spec.sessionId, driver: this.name, driverData: { ...driverData } };
  }

  /**
   * A call lost its agent: was it the sandbox that died (OOM kill, pid 1
   * killed)? The sandbox process takes a moment to go after a fatal OOM, so
   * look a few times before trusting "running".
   */
  private async explain(handle: SandboxHandle, error: unknown): Promise<unknown> {
    if (!(error instanceof AirlockError) || error.code !== 'SANDBOX_NOT_ANSWERING') return error;
    for (let attempt = 0; attempt < 6; attempt++) {
      const status = await this.status(handle);
      if (status !== 'running' && status !== 'paused') return this.diedWithLog(handle, status);
      await delay(250);
    }
    return error;
  }

  private async requireAlive(handle: SandboxHandle): Promise<void> {
    const status = await this.status(handle);
    if (status !== 'running' && status !== 'paused') throw await this.diedWithLog(handle, status);
  }

  private async diedWithLog(handle: SandboxHandle, status: string): Promise<AirlockError> {
    const { stateDir, diskDir } = handleData(handle);
    const paths = sandboxPaths(stateDir, diskDir);
    return sandboxDeath(handle, status, paths.panicLogPath, paths.logPath);
  }

  private skeletonDir(): string {
    return join(this.stateRoot, 'skeleton');
  }

  private async ensureRoots(): Promise<void> {
    await mkdir(join(this.stateRoot, 'runsc'), { recursive: true, mode: 0o700 });
    await ensureSkeleton(this.skeletonDir());
  }
}

/** The session of a sandbox named by `sandboxIdFor` (sandboxes from before the registry have no entry). */
function sessionIdFromName(sandboxId: string): string | undefined {
  const match = /^airlock-(.+?)-(?:g\d+|run-[A-Za-z0-9]+|fork-.*)$/.exec(sandboxId);
  return match?.[1];
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
