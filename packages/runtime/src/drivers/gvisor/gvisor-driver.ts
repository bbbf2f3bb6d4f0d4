/**
 * The gVisor (runsc) sandbox driver: one user-space-kernel machine per
 * session, with its writable root layer and /workspace on the session disk.
 * See docs in `in-sandbox-scripts.ts` (how commands run), `rootfs-view.ts`
 * (why the image is mounted read-only) and `cgroups.ts` (limits).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type {
  CheckpointResult,
  DriverCapabilities,
  DriverVolumes,
  ExecOutcome,
  ExecRequest,
  SandboxDriver,
  SandboxHandle,
  SandboxIdentity,
  SandboxListing,
  SandboxPurpose,
  SandboxResources,
  SandboxSpec,
  SandboxUsage,
} from '../../core/sandbox-driver.js';
import { readUsage, removeCgroups, wasOomKilled, writeLimits } from './cgroups.js';
import { checkGvisorHost } from './host-check.js';
import { execCommand } from './exec-command.js';
import { EXEC_FROM_PATH, INIT_SCRIPT, JOB_SCRIPT, NPROC_RESERVE, TOOLBOX_PATH } from './in-sandbox-scripts.js';
import { WORKSPACE_PATH } from './oci-spec.js';
import { ensureSkeleton } from './rootfs-view.js';
import { Runsc, runscFailure } from './runsc.js';
import {
  execProcessesOf,
  hostProcessesOf,
  isProcessAlive,
  logTail,
  orphanedInvocations,
  prepareSandboxFiles,
  removeSandboxFiles,
  sandboxPaths,
  directorySpec,
  validateEnv,
  validateSpec,
  type DirectorySpec,
  type PreparedSandbox,
} from './sandbox-files.js';
import { superviseCommand, type SupervisedOutcome } from './supervised-command.js';
import { NETSTACK_WRAPPER, SandboxNetworks } from './sandbox-network.js';
import { connectPort } from './port-connection.js';
import { START_MARKER_PRINTF, StartMarkerFilter } from './start-marker.js';
import type { Duplex } from 'node:stream';
import { personalizeSandbox } from './sandbox-identity.js';
import { boundProcDentryCache } from './proc-dentry-cache.js';
import { recordRelayProtocol } from './relay-protocol.js';
import { markCheckpointImage, RULE_MOUNTS } from './sandbox-markers.js';
import { SandboxRegistry } from './sandbox-registry.js';

/** Options of the gVisor driver. */
export interface GvisorDriverOptions {
  /** driver-owned host directory: runsc's `--root` and the rootfs skeleton live here */
  stateRoot: string;
  /** default /usr/bin/runsc */
  runscPath?: string;
  /** static busybox on the host, bind-mounted read-only at `toolboxPath`; default /bin/busybox */
  toolboxHostPath?: string;
  /** runsc platform; default systrap. kvm is refused: it hangs on this host kind. */
  platform?: 'systrap' | 'ptrace';
  /**
   * Where the control plane puts sandbox state dirs (`SandboxSpec.stateDir`), when they share one
   * parent: `list()` then also reports a state dir that no registered sandbox owns (left by a
   * version without the registry), so reconciliation removes it.
   */
  sandboxesDir?: string;
}

/** Every runsc container id of this driver starts with this, so `list` finds only ours. */
export const CONTAINER_PREFIX = 'airlock-';

/** What the driver stores in `SandboxHandle.driverData`. */
interface GvisorHandleData {
  stateDir: string;
  diskDir: string;
}

/** The SandboxDriver over gVisor's runsc. */
export class GvisorDriver implements SandboxDriver {
  readonly specificationVersion = 'v2' as const;
  readonly name = 'gvisor';
  readonly capabilities: DriverCapabilities = { snapshot: true, fork: true, network: true, resize: true, pause: true, sharedDisk: true };
  readonly volumes: DriverVolumes = { rootfs: 'directory', disk: 'directory' };
  readonly toolboxPath = TOOLBOX_PATH;

  private readonly runsc: Runsc;
  private readonly stateRoot: string;
  private readonly toolboxHostPath: string;
  private readonly platform: 'systrap' | 'ptrace';
  private readonly networks: SandboxNetworks;
  private readonly registry: SandboxRegistry;
  private readonly sandboxesDir: string | undefined;

  constructor(options: GvisorDriverOptions) {
    if ((options.platform as string | undefined) === 'kvm') {
      throw new AirlockError('INVALID_ARGUMENTS', 'runsc --platform=kvm hangs on this host kind (PVM); use systrap');
    }
    this.stateRoot = options.stateRoot;
    this.toolboxHostPath = options.toolboxHostPath ?? '/bin/busybox';
    this.platform = options.platform ?? 'systrap';
    this.runsc = new Runsc({ binary: options.runscPath ?? '/usr/bin/runsc', stateRoot: join(options.stateRoot, 'runsc') });
    this.networks = new SandboxNetworks(options.stateRoot);
    this.registry = new SandboxRegistry(join(options.stateRoot, 'registry'));
    this.sandboxesDir = options.sandboxesDir;
  }

  async checkHost(): Promise<void> {
    await checkGvisorHost(this.runsc, this.toolboxHostPath);
    await this.ensureRoots();
    // A crashed control plane leaves its runsc invocations (an exec, a checkpoint) behind: stop them
    // before anything is reconciled, so none of them changes a sandbox while it is being repaired.
    for (const pid of await orphanedInvocations(join(this.stateRoot, 'runsc'))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // At start-up nothing is being created: a namespace without its runsc container is a crash leftover.
    for (const sandboxId of await this.networks.list()) {
      if (!(await this.runsc.state(containerIdOf(sandboxId)))) await this.networks.remove(sandboxId);
    }
    await this.networks.pruneFirewall();
  }

  sandboxIdFor(purpose: SandboxPurpose): string {
    return purpose.purpose === 'machine' ? `airlock-${purpose.sessionId}-g${purpose.generation}` : `airlock-${purpose.sessionId}-run-${purpose.nonce}`;
  }

  async start(spec: SandboxSpec): Promise<SandboxHandle> {
    return this.launch(directorySpec(spec), undefined);
  }

  async exec(handle: SandboxHandle, request: ExecRequest): Promise<ExecOutcome> {
    const { stateDir } = handleData(handle);
    // The relay prints the start marker (see in-sandbox-scripts.ts); transient commands run without it.
    const marker = request.transient ? undefined : new StartMarkerFilter(request.onStdout);
    const outcome = await execCommand(this.runsc, containerIdOf(handle.sandboxId), stateDir, marker ? { ...request, onStdout: marker.push } : request);
    marker?.flush();
    if (outcome.exitCode !== 0 && !outcome.timedOut && !outcome.aborted) await this.assertAlive(handle, outcome);
    return { exitCode: outcome.exitCode, timedOut: outcome.timedOut, aborted: outcome.aborted, durationMs: outcome.durationMs, ...startOf(marker) };
  }

  async runOnce(volumeSpec: SandboxSpec, request: Omit<ExecRequest, 'argv'>): Promise<ExecOutcome> {
    const spec = directorySpec(volumeSpec);
    const argv = spec.oneShot?.argv;
    if (!argv || argv.length === 0) throw new AirlockError('INVALID_ARGUMENTS', 'runOnce needs spec.oneShot.argv with at least one element');
    validateSpec(spec);
    validateEnv(request.env);
    const handle = this.handleOf(spec);
    try {
      await this.ensureRoots();
      await this.register(spec);
      const netnsPath = await this.attachNetwork(spec);
      const paths = await prepareSandboxFiles({
        spec,
        ...(netnsPath === undefined ? {} : { netnsPath }),
        skeletonDir: this.skeletonDir(),
        toolboxHostPath: this.toolboxHostPath,
        // The wrapper marks the moment the command starts, so the caller can tell boot from run.
        args: [TOOLBOX_PATH, 'sh', '-c', `printf '${START_MARKER_PRINTF}'\n${EXEC_FROM_PATH}`, 'airlock-once', ...argv],
        cwd: request.cwd,
        env: { ...spec.env, ...request.env },
        ruleMounts: true,
      });
      const containerId = containerIdOf(spec.sandboxId);
      // root:memory: the per-call root layer is thrown away with the sandbox; only /workspace persists.
      const child = this.runsc.spawn([...this.launchFlags(paths, 'root:memory', netnsPath !== undefined), 'run', `--bundle=${paths.bundleDir}`, containerId], {
        stdio: 'pipe',
        cwd: paths.bundleDir,
        ...(netnsPath === undefined ? {} : { wrapper: NETSTACK_WRAPPER }),
      });
      const killInSandbox = async (): Promise<void> => {
        const killed = await this.runsc.run(['kill', containerId, 'KILL'], { timeoutMs: 5_000 });
        if (killed.code !== 0) await this.runsc.run(['delete', '-force', containerId], { timeoutMs: 30_000 });
      };
      const marker = new StartMarkerFilter(request.onStdout);
      const outcome = await superviseCommand(child, { request: { ...request, onStdout: marker.push }, killInSandbox });
      marker.flush();
      return { exitCode: outcome.exitCode, timedOut: outcome.timedOut, aborted: outcome.aborted, durationMs: outcome.durationMs, ...startOf(marker) };
    } finally {
      await this.destroy(handle);
    }
  }

  /**
   * Checkpoints with the sandbox paused and left running, and destroys it only
   * once the image is complete under its final name. A plain `checkpoint` kills
   * the sandbox first and keeps "running" in `state` for a moment (pitfall 4),
   * so a failure (ENOSPC, a runsc error) would lose the session. Measured on a
   * small sandbox: pause 44 ms + checkpoint --leave-running 170–440 ms, against
   * 460 ms for a plain checkpoint; the delete that follows costs the same
   * (~1.3–2 s, the sandbox process's teardown) either way.
   */
  async checkpoint(handle: SandboxHandle, imageDir: string, options: { leaveRunning: boolean }): Promise<CheckpointResult> {
    const started = performance.now();
    const containerId = containerIdOf(handle.sandboxId);
    const status = await this.status(handle);
    if (status !== 'running' && status !== 'paused') throw this.died(handle, status);
    if (await exists(imageDir)) throw new AirlockError('INVALID_STATE', `checkpoint image ${imageDir} already exists; choose a new directory`);
    const partial = `${imageDir}.partial-${randomBytes(4).toString('hex')}`;
    await mkdir(partial, { recursive: true });
    const wasPaused = status === 'paused';
    try {
      if (!wasPaused) await this.runsc.check(['pause', containerId], `pausing ${handle.sandboxId} for a checkpoint`);
      // An exec in flight holds host pipes inside the sandbox: the image would save fine and then
      // fail to restore ("no host FD available"), after the original was destroyed. Checked once
      // paused, so no exec can start in between.
      if ((await execProcessesOf(containerId)).length > 0) {
        throw new AirlockError('SESSION_BUSY', `sandbox ${handle.sandboxId} is running a command; wait for it to finish (or abort it) before a checkpoint`);
      }
      const result = await this.runsc.run(['checkpoint', `--image-path=${partial}`, '--compression=none', '--leave-running', containerId], { timeoutMs: 600_000 });
      if (result.code !== 0) {
        const error = runscFailure(`checkpoint of ${handle.sandboxId} failed; the sandbox is still running`, result);
        if (!(await isProcessAlive((await this.runsc.state(containerId))?.pid ?? 0))) throw this.died(handle, 'stopped');
        throw error;
      }
      await markCheckpointImage(handleData(handle).stateDir, partial);
      await rename(partial, imageDir);
    } catch (error) {
      await rm(partial, { recursive: true, force: true });
      if (!wasPaused) await this.runsc.run(['resume', containerId]).catch(() => undefined);
      throw error;
    }
    if (options.leaveRunning) {
      if (!wasPaused) await this.runsc.check(['resume', containerId], `resuming ${handle.sandboxId} after its checkpoint`);
    } else {
      await this.destroy(handle);
    }
    return { imageDir, bytes: await diskUsage(imageDir), durationMs: Math.round(performance.now() - started) };
  }

  async restore(spec: SandboxSpec, imageDir: string): Promise<SandboxHandle> {
    if (!(await exists(join(imageDir, 'checkpoint.img')))) {
      throw new AirlockError('SNAPSHOT_NOT_FOUND', `no checkpoint image in ${imageDir}; take one with checkpoint() first`);
    }
    return this.launch(directorySpec(spec), imageDir);
  }

  async personalize(handle: SandboxHandle, identity: SandboxIdentity): Promise<void> {
    // No liveness probe first: it is called right after a restore, and the exec fails on a dead sandbox anyway.
    await personalizeSandbox(this.runsc, containerIdOf(handle.sandboxId), identity);
  }

  async pause(handle: SandboxHandle): Promise<void> {
    await this.requireAlive(handle);
    await this.runsc.check(['pause', containerIdOf(handle.sandboxId)], `pausing ${handle.sandboxId}`);
  }

  async unpause(handle: SandboxHandle): Promise<void> {
    await this.requireAlive(handle);
    await this.runsc.check(['resume', containerIdOf(handle.sandboxId)], `resuming ${handle.sandboxId}`);
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
    const state = await this.runsc.state(containerIdOf(handle.sandboxId));
    if (!state) return 'missing';
    return liveStatus(state.status, await isProcessAlive(state.pid));
  }

  async destroy(handle: SandboxHandle): Promise<void> {
    // First, and even for a handle without driverData (orphans): the sandbox loses its only link at once.
    await this.networks.remove(handle.sandboxId);
    // A handle may come without driverData (a crash before it was stored): the registry knows the files.
    const files = storedHandleData(handle) ?? (await this.registry.get(handle.sandboxId));
    const containerId = containerIdOf(handle.sandboxId);
    // A one-shot sandbox is usually gone already (`runsc run` deletes it on exit): skip two runsc calls then.
    const state = (await this.hasRunscState(containerId)) ? await this.runsc.state(containerId) : undefined;
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
    await this.removeRunscState(containerId);
    await removeCgroups(handle.sandboxId);
    if (files) await removeSandboxFiles(files.stateDir);
    else if (this.sandboxesDir) await removeSandboxFiles(join(this.sandboxesDir, handle.sandboxId));
    await this.registry.remove(handle.sandboxId);
  }

  async connect(handle: SandboxHandle, port: number): Promise<Duplex> {
    return connectPort(this.runsc, containerIdOf(handle.sandboxId), handle.sandboxId, port);
  }

  async list(): Promise<SandboxListing[]> {
    await this.ensureRoots();
    const listings = new Map<string, SandboxListing>();
    for (const state of await this.runsc.list()) {
      if (!state.id.startsWith(CONTAINER_PREFIX)) continue;
      const sandboxId = state.id.slice(CONTAINER_PREFIX.length);
      listings.set(sandboxId, { sandboxId, status: liveStatus(state.status, await isProcessAlive(state.pid)) });
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
    if ((await this.registry.get(spec.sandboxId)) || (await this.runsc.state(containerId))) {
      throw new AirlockError('INVALID_STATE', `sandbox ${spec.sandboxId} already exists; use a new sandboxId for every start or restore`);
    }
    try {
      await this.register(spec);
      const netnsPath = await this.attachNetwork(spec);
      const paths = await prepareSandboxFiles({
        spec,
        ...(netnsPath === undefined ? {} : { netnsPath }),
        skeletonDir: this.skeletonDir(),
        toolboxHostPath: this.toolboxHostPath,
        // init must be identical for run and restore: restore re-checks the spec's process.
        args: [TOOLBOX_PATH, 'sh', '-c', INIT_SCRIPT, 'airlock-init', JOB_SCRIPT, String(spec.resources.maxProcesses)],
        cwd: WORKSPACE_PATH,
        env: spec.env,
        // init and the relays may fork even when commands used up their quota (see in-sandbox-scripts.ts).
        processLimit: spec.resources.maxProcesses + NPROC_RESERVE,
        // A restore needs the mounts its image was taken with: an image from before the rule mounts gets none.
        ruleMounts: imageDir === undefined || (await RULE_MOUNTS.isIn(imageDir)),
      });
      const command = imageDir
        ? ['restore', `--image-path=${imageDir}`, '--detach', `--bundle=${paths.bundleDir}`, containerId]
        : ['run', '--detach', `--bundle=${paths.bundleDir}`, containerId];
      const doing = imageDir ? `restoring ${spec.sandboxId} from ${imageDir}` : `starting ${spec.sandboxId}`;
      const result = await this.runsc.runWithLog([...this.launchFlags(paths, `root:dir=${paths.overlayDir}`, netnsPath !== undefined), ...command], {
        logPath: paths.logPath,
        cwd: paths.bundleDir,
        ...(netnsPath === undefined ? {} : { wrapper: NETSTACK_WRAPPER }),
      });
      if (result.code !== 0) throw runscFailure(doing, { ...result, stderr: await logTail(paths.logPath) });
      // Before any command runs: otherwise procfs keeps ~80 KiB per exited process (proc-dentry-cache.ts).
      await boundProcDentryCache(this.runsc, containerId, spec.stateDir, imageDir);
      await recordRelayProtocol(spec.stateDir, imageDir);
      return handle;
    } catch (error) {
      await this.destroy(handle).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Flags of `run` and `restore`: the network (none, or gVisor's own stack in the sandbox's
   * namespace, see sandbox-network.ts), the root layer's overlay, the seccomp profile, the platform.
   * A sandbox with rule mounts has its files served by the gofer (`--directfs=false`): with directfs,
   * runsc 20240729 truncates a file of a read-only bind mount on `open(O_TRUNC)` before it answers
   * EROFS (measured: `: > file` emptied it); the gofer refuses the open on the host side, and keeps
   * refusing writes even if the mount were made writable inside. Sandboxes without rules keep directfs.
   */
  private launchFlags(paths: PreparedSandbox, overlay: string, networked = false): string[] {
    return [
      networked ? '--network=sandbox' : '--network=none',
      `--overlay2=${overlay}`,
      // the spec's profile (sandbox-seccomp.ts) keeps every process from changing the mounts
      '--oci-seccomp',
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
    const driverData: GvisorHandleData = { stateDir: spec.stateDir, diskDir: spec.diskDir };
    return { sandboxId: spec.sandboxId, sessionId: spec.sessionId, driver: this.name, driverData: { ...driverData } };
  }

  /** After a command failed: was it the sandbox that died (OOM kill, crash)? */
  private async assertAlive(handle: SandboxHandle, outcome: SupervisedOutcome): Promise<void> {
    // The sandbox process takes a moment to go after a fatal OOM; look again before trusting "running".
    const attempts = outcome.exitCode >= 128 || outcome.hostSignal ? 6 : 1;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const status = await this.status(handle);
      if (status === 'paused') throw new AirlockError('INVALID_STATE', `sandbox ${handle.sandboxId} is paused; unpause it before running commands`);
      if (status !== 'running') throw await this.diedWithLog(handle, status);
      if (attempt + 1 < attempts) await delay(250);
    }
  }

  private async requireAlive(handle: SandboxHandle): Promise<void> {
    const status = await this.status(handle);
    if (status !== 'running' && status !== 'paused') throw await this.diedWithLog(handle, status);
  }

  private died(handle: SandboxHandle, status: string, panic = '', oomKilled?: boolean): AirlockError {
    const cause =
      oomKilled === true ? 'it ran out of memory and the kernel killed it'
      : oomKilled === false ? 'its init process ended, e.g. a command killed pid 1'
      : 'it ran out of memory, or its init process ended';
    const remedy = oomKilled === false ? '' : ', with more memory (resources.memoryMb) if it ran out';
    return new AirlockError(
      'SANDBOX_DIED',
      `sandbox ${handle.sandboxId} is ${status === 'missing' ? 'gone' : 'dead'}: ${cause}; its processes and memory are lost, ` +
        `its disk is kept until the session is terminated. Fork a snapshot taken earlier to go on${remedy}`,
      { details: { sandboxId: handle.sandboxId, sessionId: handle.sessionId, status, ...(oomKilled === undefined ? {} : { oomKilled }), ...(panic ? { panic } : {}) } },
    );
  }

  private async diedWithLog(handle: SandboxHandle, status: string): Promise<AirlockError> {
    const { stateDir, diskDir } = handleData(handle);
    const panic = await logTail(sandboxPaths(stateDir, diskDir).panicLogPath);
    return this.died(handle, status, panic, await wasOomKilled(handle.sandboxId));
  }

  /** Removes runsc's files of a container that `delete` could not remove (runsc killed mid-way). */
  /** Whether runsc keeps any state of the container (its files exist from create to delete). */
  private async hasRunscState(containerId: string): Promise<boolean> {
    const names = await readdir(join(this.stateRoot, 'runsc')).catch(() => [] as string[]);
    return names.some((name) => name.startsWith(`${containerId}_sandbox:`) || name === `runsc-${containerId}.sock`);
  }

  private async removeRunscState(containerId: string): Promise<void> {
    const root = join(this.stateRoot, 'runsc');
    for (const name of await readdir(root).catch(() => [] as string[])) {
      if (name.startsWith(`${containerId}_sandbox:`) || name === `runsc-${containerId}.sock`) await rm(join(root, name), { force: true, recursive: true });
    }
  }

  private skeletonDir(): string {
    return join(this.stateRoot, 'skeleton');
  }

  private async ensureRoots(): Promise<void> {
    await mkdir(join(this.stateRoot, 'runsc'), { recursive: true, mode: 0o700 });
    await ensureSkeleton(this.skeletonDir());
  }
}

/** `{ startMs }` when the command's start marker was seen. */
function startOf(marker: StartMarkerFilter | undefined): { startMs?: number } {
  return marker?.startMs === undefined ? {} : { startMs: marker.startMs };
}

/** The session of a sandbox named by `sandboxIdFor` (sandboxes from before the registry have no entry). */
function sessionIdFromName(sandboxId: string): string | undefined {
  const match = /^airlock-(.+?)-(?:g\d+|run-[A-Za-z0-9]+|fork-.*)$/.exec(sandboxId);
  return match?.[1];
}

function containerIdOf(sandboxId: string): string {
  return `${CONTAINER_PREFIX}${sandboxId}`;
}

function handleData(handle: SandboxHandle): GvisorHandleData {
  const data = storedHandleData(handle);
  if (!data) {
    throw new AirlockError('INVALID_ARGUMENTS', `handle of ${handle.sandboxId} was not made by the gvisor driver (driverData lacks stateDir/diskDir)`);
  }
  return data;
}

/** The driver data of a handle this driver made, or undefined for a bare id (an orphan found on the host). */
function storedHandleData(handle: SandboxHandle): GvisorHandleData | undefined {
  const { stateDir, diskDir } = handle.driverData;
  return typeof stateDir === 'string' && typeof diskDir === 'string' ? { stateDir, diskDir } : undefined;
}

/** runsc's `state` keeps saying "running" after the sandbox process died; trust the process. */
function liveStatus(runscStatus: string, processAlive: boolean): SandboxListing['status'] {
  if (runscStatus === 'running' || runscStatus === 'paused') return processAlive ? runscStatus : 'stopped';
  if (runscStatus === 'stopped') return 'stopped';
  return 'unknown';
}

/** Bytes the image takes on disk (like `du`). */
async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await diskUsage(path);
    else total += (await stat(path)).blocks * 512;
  }
  return total;
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

