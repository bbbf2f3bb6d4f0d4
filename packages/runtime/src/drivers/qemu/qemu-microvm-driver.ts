/**
 * The `microvm` sandbox driver: one QEMU `microvm` machine per sandbox, with
 * its own guest kernel (Debian's cloud kernel), the session image as its
 * read-only root disk and the session disk as its second disk, a guest agent
 * as pid 1 over a virtio-serial port, KVM when a probe finds it usable and
 * software emulation (TCG) otherwise. Snapshots are QEMU migrations to a
 * file; fork branches map the snapshot's RAM file copy-on-write. See
 * docs/decisions/0016-microvm-driver.md and docs/architecture.md.
 */
import { rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
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
  TerminalRequest,
} from '../../core/sandbox-driver.js';
import type { SandboxFiles } from '../../core/sandbox-files.js';
import { leftoverCgroups, readUsage, removeCgroups, wasOomKilled } from '../gvisor/cgroups.js';
import { GuestFiles } from './guest-files.js';
import { connectGuestPort } from './guest-port-stream.js';
import { listGuestProcesses, probeGuest, signalGuestProcess, startDetached } from './guest-system.js';
import { GUEST_BUSYBOX } from './guest-toolbox.js';
import { checkpointMachine } from './machine-checkpoint.js';
import { launchMachine, machineFiles, tail, type LaunchMode } from './machine-launcher.js';
import { verifiedManifest } from './memory-image.js';
import { MicrovmHost, type MicrovmDriverOptions } from './microvm-host.js';
import { commandLineOf, killAndWait, processesWith } from './qemu-process.js';

export type { MicrovmDriverOptions } from './microvm-host.js';

/** PATH of commands whose environment names none (as the gVisor driver). */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The SandboxDriver over QEMU microVMs. */
export class QemuMicrovmDriver implements SandboxDriver {
  readonly specificationVersion = 'v2' as const;
  readonly name = 'microvm';
  /** No live resize: the guest's RAM and vCPUs are fixed at boot (and part of every snapshot). */
  /** No terminals yet: the interim guest agent has no pseudo-terminals (the shared agent brings them). */
  readonly capabilities: DriverCapabilities = { snapshot: true, fork: true, network: true, resize: false, pause: true, sharedDisk: false, terminal: false };
  readonly volumes: DriverVolumes = { rootfs: 'block-device', disk: 'block-device' };
  readonly files: SandboxFiles;
  private readonly host: MicrovmHost;

  constructor(options: MicrovmDriverOptions) {
    this.host = new MicrovmHost(options);
    this.files = new GuestFiles((handle) => this.reachableAgent(handle));
  }

  /** What this host runs VMs with: kernel, accelerator (and why), QEMU. For the audit log. */
  async describeRuntime(): Promise<Record<string, string>> {
    const prepared = await this.host.prepare();
    return {
      kernelDigest: prepared.kit.kernelDigest,
      kernelRelease: prepared.kit.kernelRelease,
      kernelPackage: prepared.kit.kernelPackage,
      accelerator: prepared.accelerator.accelerator,
      acceleratorReason: prepared.accelerator.reason,
      qemuVersion: prepared.qemuVersion,
    };
  }

  async close(): Promise<void> {
    await this.host.closeConnections();
  }

  async checkHost(): Promise<void> {
    await this.host.prepare();
    // At start-up nothing is being created: a namespace without its VM is a crash leftover.
    for (const sandboxId of await this.host.networks.list()) {
      if ((await this.host.processesOf(sandboxId)).length === 0) await this.host.networks.remove(sandboxId);
    }
    await this.host.networks.pruneFirewall();
  }

  sandboxIdFor(purpose: SandboxPurpose): string {
    return purpose.purpose === 'machine' ? `vm-${purpose.sessionId}-g${purpose.generation}` : `vm-${purpose.sessionId}-run-${purpose.nonce}`;
  }

  async start(spec: SandboxSpec): Promise<SandboxHandle> {
    // A scratch machine's root layer is a tmpfs, gone with it: only /workspace persists.
    return this.launch(spec, { kind: 'boot', root: spec.scratch ? 'ephemeral' : 'persistent' });
  }

  async restore(spec: SandboxSpec, imageDir: string): Promise<SandboxHandle> {
    const manifest = await verifiedManifest(imageDir);
    return this.launch(spec, { kind: 'restore', imageDir, manifest });
  }

  async exec(handle: SandboxHandle, request: ExecRequest): Promise<ExecOutcome> {
    const entry = await this.host.entry(handle.sandboxId);
    validateEnv(request.env);
    const agent = await this.reachableAgent(handle);
    try {
      const full = { ...request, env: { PATH: DEFAULT_PATH, HOME: '/root', ...entry.env, ...request.env } };
      const outcome = request.detach ? await startDetached(agent, { ...full, detach: request.detach }) : await agent.exec(full);
      if (outcome.exitCode !== 0 && !outcome.timedOut && !outcome.aborted) await this.assertAlive(handle);
      return outcome;
    } catch (error) {
      await this.assertAlive(handle);
      throw error;
    }
  }

  async runOnce(spec: SandboxSpec, request: Omit<ExecRequest, 'argv'>): Promise<ExecOutcome> {
    const argv = spec.oneShot?.argv;
    if (!argv || argv.length === 0) throw new AirlockError('INVALID_ARGUMENTS', 'runOnce needs spec.oneShot.argv with at least one element');
    const began = performance.now();
    const handle = this.handleOf(spec);
    try {
      // The whole VM is the call's sandbox: its root layer is a tmpfs, only the session disk persists.
      await this.launch(spec, { kind: 'boot', root: 'ephemeral' });
      const bootMs = performance.now() - began;
      const outcome = await this.exec(handle, { ...request, argv });
      // The guest's page cache dies with the VM: what the call wrote reaches the session disk only if flushed.
      const flushed = await (await this.reachableAgent(handle)).exec({ argv: [GUEST_BUSYBOX, 'sync'], cwd: '/', env: {}, timeoutMs: 120_000 }, { outsideWorkload: true });
      if (flushed.exitCode !== 0) throw new AirlockError('DRIVER_FAILED', `flushing the session disk after a per-call command failed (exit ${flushed.exitCode}); its writes may be lost`);
      return { ...outcome, durationMs: Math.round(performance.now() - began), startMs: Math.round(bootMs + (outcome.startMs ?? 0)) };
    } finally {
      await this.destroy(handle);
    }
  }

  async checkpoint(handle: SandboxHandle, imageDir: string, options: { leaveRunning: boolean }): Promise<CheckpointResult> {
    const result = await checkpointMachine(this.host, handle, imageDir, options.leaveRunning);
    if (!options.leaveRunning) await this.destroy(handle);
    return result;
  }

  async personalize(handle: SandboxHandle, identity: SandboxIdentity): Promise<void> {
    if (!HOSTNAME.test(identity.hostname)) {
      throw new AirlockError('INVALID_ARGUMENTS', `invalid hostname ${JSON.stringify(identity.hostname)}: use 1-63 letters, digits and '-' (not at either end)`);
    }
    if (!/^[0-9a-f]{32}$/.test(identity.machineId)) throw new AirlockError('INVALID_ARGUMENTS', 'machineId must be 32 lowercase hex digits');
    if (identity.entropy.length < 32 || identity.entropy.length > 512) throw new AirlockError('INVALID_ARGUMENTS', 'entropy must be 32 to 512 bytes of host randomness');
    await (await this.reachableAgent(handle)).identity(identity);
  }

  async pause(handle: SandboxHandle): Promise<void> {
    await this.requireAlive(handle);
    await (await this.host.monitor(handle.sandboxId)).execute('stop');
  }

  async unpause(handle: SandboxHandle): Promise<void> {
    await this.requireAlive(handle);
    await (await this.host.monitor(handle.sandboxId)).execute('cont');
  }

  async health(handle: SandboxHandle): Promise<SandboxHealth> {
    const status = await this.host.status(handle.sandboxId);
    if (status !== 'running') return { answering: false, reason: status };
    return probeGuest(await this.reachableAgent(handle));
  }

  async processes(handle: SandboxHandle): Promise<SandboxProcess[]> {
    return listGuestProcesses(await this.reachableAgent(handle));
  }

  async signal(handle: SandboxHandle, pid: number, signal: string | number): Promise<void> {
    await signalGuestProcess(await this.reachableAgent(handle), pid, signal);
  }

  async openTerminal(handle: SandboxHandle, _request: TerminalRequest): Promise<SandboxTerminal> {
    throw new AirlockError('DRIVER_UNAVAILABLE', `sandbox ${handle.sandboxId} is a microVM, whose guest agent has no terminals yet; run the command without a terminal`);
  }

  async resize(handle: SandboxHandle, _resources: Pick<SandboxResources, 'cpus' | 'memoryMb'>): Promise<void> {
    throw new AirlockError('INVALID_STATE', `the microvm driver cannot resize ${handle.sandboxId} in place: a VM's RAM and vCPUs are fixed at boot; start a new session with the size you need`);
  }

  async usage(handle: SandboxHandle): Promise<SandboxUsage> {
    return readUsage(handle.sandboxId);
  }

  async status(handle: SandboxHandle): Promise<SandboxListing['status'] | 'missing'> {
    return this.host.status(handle.sandboxId);
  }

  async destroy(handle: SandboxHandle): Promise<void> {
    const { sandboxId } = handle;
    await this.host.networks.remove(sandboxId);
    await this.host.disconnect(sandboxId);
    await killAndWait(await this.host.processesOf(sandboxId));
    await removeCgroups(sandboxId);
    const entry = await this.host.registry.get(sandboxId);
    const stateDir = entry?.stateDir ?? (this.host.options.sandboxesDir ? join(this.host.options.sandboxesDir, sandboxId) : undefined);
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
    await rm(this.host.runDirOf(sandboxId), { recursive: true, force: true });
    // The installation's socket folder goes with its last VM (another VM may be using it: then it stays).
    await rmdir(dirname(this.host.runDirOf(sandboxId))).catch(() => undefined);
    await this.host.registry.remove(sandboxId);
  }

  async list(): Promise<SandboxListing[]> {
    const ids = new Set([...(await this.host.registry.list()), ...(await this.host.networks.list())]);
    // A QEMU of this installation whose registry entry is gone (a crash mid-destroy): `-name airlock-<id>`.
    for (const pid of await processesWith(this.host.processMarker)) {
      const args = await commandLineOf(pid);
      const name = args[args.indexOf('-name') + 1];
      if (name?.startsWith('airlock-')) ids.add(name.slice('airlock-'.length));
    }
    const listings: SandboxListing[] = [];
    for (const sandboxId of ids) {
      const status = await this.host.status(sandboxId);
      const sessionId = (await this.host.registry.get(sandboxId))?.sessionId ?? /^vm-(.+?)-(?:g\d+|run-[A-Za-z0-9]+)$/.exec(sandboxId)?.[1];
      listings.push({ sandboxId, status: status === 'missing' ? 'stopped' : status, ...(sessionId ? { sessionId } : {}) });
    }
    return listings;
  }

  async connect(handle: SandboxHandle, port: number): Promise<Duplex> {
    return connectGuestPort(await this.reachableAgent(handle), GUEST_BUSYBOX, handle.sandboxId, port);
  }

  /** Host resources of a sandbox that still exist: processes, cgroups, namespace, files. For tests and `destroy`'s checks. */
  async leftovers(sandboxId: string, stateDir?: string): Promise<string[]> {
    const found = [...(await this.host.processesOf(sandboxId)).map((pid) => `process ${pid}`), ...(await leftoverCgroups(sandboxId))];
    if ((await this.host.networks.list()).includes(sandboxId)) found.push(`netns of ${sandboxId}`);
    if (await this.host.registry.get(sandboxId)) found.push(`registry entry of ${sandboxId}`);
    for (const dir of [this.host.runDirOf(sandboxId), ...(stateDir ? [stateDir] : [])]) {
      if (await stat(dir).then(() => true, () => false)) found.push(`dir ${dir}`);
    }
    return found;
  }

  private async launch(spec: SandboxSpec, mode: LaunchMode): Promise<SandboxHandle> {
    validateSpec(spec);
    const prepared = await this.host.prepare();
    if ((await this.host.registry.get(spec.sandboxId)) || (await this.host.processesOf(spec.sandboxId)).length > 0) {
      throw new AirlockError('INVALID_STATE', `sandbox ${spec.sandboxId} already exists; use a new sandboxId for every start or restore`);
    }
    const handle = this.handleOf(spec);
    try {
      await launchMachine(this.host, prepared, spec, mode);
      return handle;
    } catch (error) {
      await this.destroy(handle).catch(() => undefined);
      throw error;
    }
  }

  private handleOf(spec: SandboxSpec): SandboxHandle {
    return { sandboxId: spec.sandboxId, sessionId: spec.sessionId, driver: this.name, driverData: { stateDir: spec.stateDir } };
  }

  /** The agent of a running VM; INVALID_STATE when paused, SANDBOX_DIED when gone. */
  private async reachableAgent(handle: SandboxHandle): Promise<Awaited<ReturnType<MicrovmHost['agent']>>> {
    const status = await this.host.status(handle.sandboxId);
    if (status === 'paused') throw new AirlockError('INVALID_STATE', `sandbox ${handle.sandboxId} is paused; unpause it before running commands`);
    if (status !== 'running') throw await this.died(handle, status);
    try {
      return await this.host.agent(handle.sandboxId, 30_000);
    } catch (error) {
      await this.assertAlive(handle);
      throw error;
    }
  }

  private async requireAlive(handle: SandboxHandle): Promise<void> {
    const status = await this.host.status(handle.sandboxId);
    if (status !== 'running' && status !== 'paused') throw await this.died(handle, status);
  }

  /** After a failed call: was it the VM that died (guest OOM panic, poweroff, QEMU killed)? */
  private async assertAlive(handle: SandboxHandle): Promise<void> {
    // QEMU takes a moment to exit after the guest powered off.
    for (let attempt = 0; attempt < 6; attempt++) {
      const status = await this.host.status(handle.sandboxId);
      if (status !== 'running' && status !== 'paused' && status !== 'unknown') throw await this.died(handle, status);
      if (attempt < 5) await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  private async died(handle: SandboxHandle, status: string): Promise<AirlockError> {
    const entry = await this.host.registry.get(handle.sandboxId);
    const console = entry ? await tail(machineFiles(entry.stateDir).consoleLog, 8) : '';
    const hostOom = await wasOomKilled(handle.sandboxId);
    const guestOom = /Out of memory|oom-kill|Kernel panic - not syncing: System is deadlocked on memory/.test(console);
    const oom = hostOom === true || guestOom;
    const cause = oom
      ? 'it ran out of memory and its kernel (or the host) killed it'
      : 'its init process ended or its kernel stopped (a command killed pid 1, powered it off, or the guest panicked)';
    return new AirlockError(
      'SANDBOX_DIED',
      `sandbox ${handle.sandboxId} is ${status === 'missing' ? 'gone' : 'dead'}: ${cause}; its processes and memory are lost, ` +
        `its disk is kept until the session is terminated. Fork a snapshot taken earlier to go on${oom ? ', with more memory (resources.memoryMb)' : ''}`,
      { details: { sandboxId: handle.sandboxId, sessionId: handle.sessionId, status, oomKilled: oom, ...(console ? { console } : {}) } },
    );
  }
}

/** Rejects specs that are unsafe as ids, paths or shell data. */
function validateSpec(spec: SandboxSpec): void {
  if (!SANDBOX_ID.test(spec.sandboxId)) {
    throw new AirlockError('INVALID_ARGUMENTS', `invalid sandboxId ${JSON.stringify(spec.sandboxId)}: use up to 64 letters, digits, '.', '_' and '-'`);
  }
  for (const [name, value] of Object.entries({ rootfs: spec.rootfs.path, disk: spec.disk.path, stateDir: spec.stateDir })) {
    if (!value.startsWith('/') || /[\s',=]/.test(value)) {
      throw new AirlockError('INVALID_ARGUMENTS', `${name} must be an absolute path without spaces, quotes, commas or '=' (QEMU options cannot carry them), got ${value}`);
    }
  }
  const { cpus, memoryMb, maxProcesses } = spec.resources;
  if (!(cpus > 0) || !Number.isInteger(memoryMb) || memoryMb < 64 || !Number.isInteger(maxProcesses) || maxProcesses < 8) {
    throw new AirlockError('INVALID_ARGUMENTS', `invalid resources ${JSON.stringify(spec.resources)}: a microVM needs cpus > 0, memoryMb >= 64 and maxProcesses >= 8 (whole numbers)`);
  }
  validateEnv(spec.env);
}

function validateEnv(env: Record<string, string>): void {
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name) || value.includes('\0')) {
      throw new AirlockError('INVALID_ARGUMENTS', `invalid environment variable ${JSON.stringify(name)}: names are letters, digits and '_', values have no NUL`);
    }
  }
}
