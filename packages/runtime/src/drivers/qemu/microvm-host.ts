/**
 * What the microVM driver's parts share on one host: where things live, the
 * registry, the networks, the one-time preparation (guest kit, accelerator
 * probe, QEMU's version) and the open connections to each VM (agent and
 * monitor), which are made lazily and dropped when they close, so a
 * restarted control plane simply reconnects.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { SandboxListing } from '../../core/sandbox-driver.js';
import { chooseAccelerator, type AcceleratorVerdict } from './accelerator-probe.js';
import { GuestAgentClient } from './guest-agent-client.js';
import { prepareGuestKit, type GuestKit } from './guest-kit.js';
import { MachineNetworks } from './machine-network.js';
import { MicrovmRegistry, type RegisteredMachine } from './microvm-registry.js';
import { commandLineOf, isAlive, processesWith } from './qemu-process.js';
import { QmpClient } from './qmp-client.js';

/** Options of the microVM driver. */
export interface MicrovmDriverOptions {
  /** driver-owned host directory: the registry and the accelerator verdict */
  stateRoot: string;
  /** cache shared by installations: the guest kernel (scripts/fetch-microvm-kernel.sh) and the built initramfs */
  cacheDir: string;
  /** default `<cacheDir>/microvm-kernel` */
  kernelDir?: string;
  /** default /usr/bin/qemu-system-x86_64 */
  qemuBinary?: string;
  /** static busybox for the initramfs and the toolbox; default /bin/busybox */
  busyboxPath?: string;
  /** `auto` (default): KVM only when the probe boots a guest under it, else TCG */
  accelerator?: 'auto' | 'tcg' | 'kvm';
  /** how long a cold boot may take until the agent answers; default $AIRLOCK_MICROVM_BOOT_TIMEOUT_MS, else 180 s */
  bootTimeoutMs?: number;
  /** short directory for the VMs' Unix sockets; default /run/airlock-microvm */
  runRoot?: string;
  /** where the control plane puts sandbox state dirs, so `destroy` finds one from an id alone */
  sandboxesDir?: string;
}

/** The one-time facts of this host. */
export interface PreparedHost {
  kit: GuestKit;
  accelerator: AcceleratorVerdict;
  qemuVersion: string;
  /** host TSC frequency in kHz, for the guest's `tsc_early_khz` */
  tscKhz: number;
}

const QEMU_HINT = 'install it with `apt-get install qemu-system-x86` (scripts/setup.sh does)';

/** Host-wide state of one microVM driver instance. */
export class MicrovmHost {
  readonly registry: MicrovmRegistry;
  readonly networks: MachineNetworks;
  readonly qemuBinary: string;
  readonly busyboxPath: string;
  readonly bootTimeoutMs: number;
  /** distinguishes installations sharing a host (their run dirs and namespaces) */
  private readonly tag: string;
  private readonly runRoot: string;
  private preparation: Promise<PreparedHost> | undefined;
  private readonly agents = new Map<string, Promise<GuestAgentClient>>();
  private readonly monitors = new Map<string, Promise<QmpClient>>();

  constructor(readonly options: MicrovmDriverOptions) {
    this.registry = new MicrovmRegistry(join(options.stateRoot, 'registry'));
    this.networks = new MachineNetworks(options.stateRoot);
    this.qemuBinary = options.qemuBinary ?? '/usr/bin/qemu-system-x86_64';
    this.busyboxPath = options.busyboxPath ?? '/bin/busybox';
    const fromEnv = Number(process.env['AIRLOCK_MICROVM_BOOT_TIMEOUT_MS']);
    this.bootTimeoutMs = options.bootTimeoutMs ?? (fromEnv > 0 ? fromEnv : 180_000);
    this.tag = createHash('sha256').update(options.stateRoot).digest('hex').slice(0, 6);
    this.runRoot = options.runRoot ?? '/run/airlock-microvm';
  }

  /** Checks the host once (QEMU, kernel, agent build, accelerator); DRIVER_UNAVAILABLE with the fix. A failure is retried next time. */
  prepare(): Promise<PreparedHost> {
    this.preparation ??= this.prepareNow().catch((error: unknown) => {
      this.preparation = undefined;
      throw error;
    });
    return this.preparation;
  }

  /** The Unix-socket directory of a sandbox, derived from its id alone (destroy needs nothing else). */
  runDirOf(sandboxId: string): string {
    return join(this.runRoot, this.tag, createHash('sha256').update(sandboxId).digest('hex').slice(0, 16));
  }

  /** What every QEMU of this installation has in its command line. */
  get processMarker(): string {
    return `${join(this.runRoot, this.tag)}/`;
  }

  /** The QEMU processes of one sandbox: its pid file when it names one, else a scan of /proc (a crash leftover). */
  async processesOf(sandboxId: string): Promise<number[]> {
    const marker = `${this.runDirOf(sandboxId)}/qmp.sock`;
    const entry = await this.registry.get(sandboxId);
    if (entry) {
      const pid = Number((await readFile(join(entry.stateDir, 'qemu.pid'), 'utf8').catch(() => '')).trim());
      // Checked by command line: a stale pid file may name a recycled pid.
      if (pid > 0 && (await commandLineOf(pid)).some((arg) => arg.includes(marker)) && (await isAlive(pid))) return [pid];
    }
    return processesWith(marker);
  }

  /** Closes every connection this process holds to a VM (the VMs run on); for a clean shutdown. */
  async closeConnections(): Promise<void> {
    const ids = new Set([...this.agents.keys(), ...this.monitors.keys()]);
    for (const sandboxId of ids) await this.disconnect(sandboxId);
  }

  /** The registry entry of a sandbox, or INVALID_ARGUMENTS for one this driver never made. */
  async entry(sandboxId: string): Promise<RegisteredMachine> {
    const entry = await this.registry.get(sandboxId);
    if (!entry) throw new AirlockError('SANDBOX_DIED', `microVM ${sandboxId} is not known to this host (it was destroyed, or never made here)`, { details: { sandboxId } });
    return entry;
  }

  /** The connection to the sandbox's agent, opened on first use. */
  agent(sandboxId: string, timeoutMs = 60_000): Promise<GuestAgentClient> {
    let client = this.agents.get(sandboxId);
    if (!client) {
      const opening = GuestAgentClient.open(join(this.runDirOf(sandboxId), 'agent.sock'), {
        timeoutMs,
        isAlive: async () => (await this.processesOf(sandboxId)).length > 0,
      });
      client = opening;
      this.agents.set(sandboxId, opening);
      opening.then(
        (opened) => opened.onClose(() => this.agents.get(sandboxId) === opening && this.agents.delete(sandboxId)),
        () => this.agents.get(sandboxId) === opening && this.agents.delete(sandboxId),
      );
    }
    return client;
  }

  /** The connection to the sandbox's QEMU monitor, opened on first use. */
  monitor(sandboxId: string, timeoutMs = 30_000): Promise<QmpClient> {
    let client = this.monitors.get(sandboxId);
    if (!client) {
      const opening = QmpClient.connect(join(this.runDirOf(sandboxId), 'qmp.sock'), timeoutMs);
      client = opening;
      this.monitors.set(sandboxId, opening);
      opening.then(
        (opened) => opened.onClose(() => this.monitors.get(sandboxId) === opening && this.monitors.delete(sandboxId)),
        () => this.monitors.get(sandboxId) === opening && this.monitors.delete(sandboxId),
      );
    }
    return client;
  }

  /** Closes the connections to a sandbox (it is going away). */
  async disconnect(sandboxId: string): Promise<void> {
    const agent = this.agents.get(sandboxId);
    const monitor = this.monitors.get(sandboxId);
    this.agents.delete(sandboxId);
    this.monitors.delete(sandboxId);
    (await agent?.catch(() => undefined))?.close();
    (await monitor?.catch(() => undefined))?.close();
  }

  /** Running, paused (stopped by the monitor, or mid-migration), stopped (registered, no QEMU), or missing. */
  async status(sandboxId: string): Promise<SandboxListing['status'] | 'missing'> {
    const pids = await this.processesOf(sandboxId);
    if (pids.length === 0 || !(await Promise.all(pids.map(isAlive))).some(Boolean)) {
      return (await this.registry.get(sandboxId)) ? 'stopped' : 'missing';
    }
    try {
      const monitor = await this.monitor(sandboxId, 5_000);
      const state = await monitor.execute<{ status: string }>('query-status');
      if (state.status === 'running') return 'running';
      if (['shutdown', 'internal-error', 'guest-panicked', 'io-error'].includes(state.status)) return 'stopped';
      return 'paused';
    } catch {
      return 'unknown';
    }
  }

  private async prepareNow(): Promise<PreparedHost> {
    await mkdir(this.options.stateRoot, { recursive: true, mode: 0o700 });
    const qemuVersion = await new Promise<string>((resolve, reject) => {
      execFile(this.qemuBinary, ['--version'], { timeout: 30_000 }, (error, stdout) => {
        if (error) {
          const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
          reject(new AirlockError('DRIVER_UNAVAILABLE', missing ? `QEMU is not installed (${this.qemuBinary}); ${QEMU_HINT}` : `${this.qemuBinary} --version failed: ${error.message}; ${QEMU_HINT}`, { cause: error }));
        } else resolve(String(stdout).split('\n')[0]?.trim() ?? '');
      });
    });
    const kit = await prepareGuestKit({
      kernelDir: this.options.kernelDir ?? join(this.options.cacheDir, 'microvm-kernel'),
      cacheDir: join(this.options.cacheDir, 'microvm-kit'),
      busyboxPath: this.busyboxPath,
    });
    const wanted = this.options.accelerator ?? 'auto';
    const accelerator: AcceleratorVerdict =
      wanted === 'auto'
        ? // Cached with the kit (keyed by host kernel, QEMU and guest kernel): one probe per host, not per installation.
          await chooseAccelerator({ qemuBinary: this.qemuBinary, kernelPath: kit.kernelPath, busyboxPath: this.busyboxPath, cachePath: join(this.options.cacheDir, 'microvm-kit', 'accelerator.json') })
        : { accelerator: wanted, reason: 'set by the driver options' };
    return { kit, accelerator, qemuVersion, tscKhz: await hostTscKhz() };
  }
}

/** The host CPU's frequency in kHz (`cpu MHz` of /proc/cpuinfo), which the guest's TSC runs at under TCG. */
async function hostTscKhz(): Promise<number> {
  const cpuinfo = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const mhz = Number(/^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuinfo)?.[1]);
  if (!(mhz > 0)) throw new AirlockError('DRIVER_UNAVAILABLE', 'cannot read the host CPU frequency from /proc/cpuinfo; the guest kernel needs it to boot under emulation');
  return Math.round(mhz * 1000);
}
