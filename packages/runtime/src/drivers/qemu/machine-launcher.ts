/**
 * Starts one microVM: booted fresh, or restored from a checkpoint image.
 * Order matters for crash safety and cleanup: the registry entry first, then
 * the namespace and cgroups, then QEMU; any failure destroys what was made
 * (the caller's `destroy`) and says why, with the console's last lines when
 * the guest got that far.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError, isAirlockError } from '../../core/errors.js';
import { blockDeviceOf, type SandboxSpec } from '../../core/sandbox-driver.js';
import { GUEST_TOOLBOX_DIR } from './guest-init-script.js';
import { readdressScript, TAP_NAME, type MachineNetworkAttachment } from './machine-network.js';
import { createMachineCgroups } from './machine-cgroups.js';
import { DEVICE_STATE_FILE, INITRAMFS_FILE, MEMORY_FILE, type MemoryImageManifest } from './memory-image.js';
import type { MicrovmHost, PreparedHost } from './microvm-host.js';
import type { RegisteredMachine } from './microvm-registry.js';
import { newcArchive, type NewcEntry } from './newc-archive.js';
import { qemuArguments, type GuestMemory } from './qemu-command-line.js';
import { isAlive, launchQemu } from './qemu-process.js';

/** How a VM comes to life. */
export type LaunchMode =
  | { kind: 'boot'; root: 'persistent' | 'ephemeral' }
  | { kind: 'restore'; imageDir: string; manifest: MemoryImageManifest };

/** Files of a VM in its state dir. */
export function machineFiles(stateDir: string): { consoleLog: string; qemuLog: string; initramfs: string; memory: string; pidFile: string } {
  return {
    consoleLog: join(stateDir, 'console.log'),
    qemuLog: join(stateDir, 'qemu.log'),
    initramfs: join(stateDir, INITRAMFS_FILE),
    memory: join(stateDir, MEMORY_FILE),
    pidFile: join(stateDir, 'qemu.pid'),
  };
}

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** How long a restored VM's agent may take to answer: no boot, only the stream to load. */
const RESTORE_AGENT_TIMEOUT_MS = 60_000;

/** Starts the VM of `spec`; resolves once its agent answered (and, after a restore, it was reseeded and thawed). */
export async function launchMachine(host: MicrovmHost, prepared: PreparedHost, spec: SandboxSpec, mode: LaunchMode): Promise<RegisteredMachine> {
  const rootfsImage = blockDeviceOf(spec.rootfs, 'rootfs');
  const diskImage = blockDeviceOf(spec.disk, 'disk');
  const files = machineFiles(spec.stateDir);
  const runDir = host.runDirOf(spec.sandboxId);
  const restored = mode.kind === 'restore' ? mode.manifest : undefined;
  if (restored && restored.networked !== (spec.network !== undefined)) {
    throw new AirlockError('INVALID_STATE', `the image was taken ${restored.networked ? 'with' : 'without'} a network and the sandbox asks ${spec.network ? 'for one' : 'for none'}; a VM is restored with the devices it had`);
  }
  const memory: GuestMemory =
    mode.kind === 'boot' || mode.manifest.kind === 'shared-memory'
      ? // A fork branch (it comes with an identity) maps the image's RAM copy-on-write, sharing it with its
        // siblings; a resume gets its own copy, so its own snapshots stay device state plus a RAM file.
        spec.identity && mode.kind === 'restore'
        ? { kind: 'private-file', path: join(mode.imageDir, MEMORY_FILE) }
        : { kind: 'shared-file', path: files.memory }
      : { kind: 'anonymous' };
  const entry: RegisteredMachine = {
    sandboxId: spec.sandboxId,
    sessionId: spec.sessionId,
    stateDir: spec.stateDir,
    runDir,
    env: spec.env,
    memory,
    // A restored VM keeps the size it was saved with: its devices and RAM layout are in the stream.
    cpus: restored?.cpus ?? spec.resources.cpus,
    memoryMb: restored?.memoryMb ?? spec.resources.memoryMb,
    kernelDigest: restored?.kernelDigest ?? prepared.kit.kernelDigest,
    kernelRelease: restored?.kernelRelease ?? prepared.kit.kernelRelease,
    accelerator: prepared.accelerator.accelerator,
    registeredAt: new Date().toISOString(),
  };
  await host.registry.put(entry);
  await mkdir(spec.stateDir, { recursive: true, mode: 0o700 });
  await mkdir(runDir, { recursive: true, mode: 0o700 });
  let network: MachineNetworkAttachment | undefined;
  if (spec.network) {
    network = await host.networks.create(spec.sandboxId, spec.network);
    entry.network = { netnsPath: network.netnsPath, address: network.address, prefixLength: network.prefixLength, gateway: network.gateway };
    await host.registry.put(entry);
  }
  const cgroupProcs = await createMachineCgroups(spec.sandboxId, { cpus: entry.cpus, memoryMb: entry.memoryMb });
  if (mode.kind === 'restore') await copyFile(join(mode.imageDir, INITRAMFS_FILE), files.initramfs);
  else await writeFile(files.initramfs, Buffer.concat([await readFile(prepared.kit.initramfsPath), await configArchive(spec, mode.root, network)]), { mode: 0o600 });
  if (memory.kind === 'shared-file') {
    await rm(memory.path, { force: true });
    if (mode.kind === 'restore') await copySparse(join(mode.imageDir, MEMORY_FILE), memory.path);
  }
  const args = qemuArguments({
    sandboxId: spec.sandboxId,
    accelerator: prepared.accelerator.accelerator,
    cpus: entry.cpus,
    memoryMb: entry.memoryMb,
    memory,
    kernelPath: prepared.kit.kernelPath,
    initramfsPath: files.initramfs,
    tscKhz: prepared.tscKhz,
    rootfsImage,
    diskImage,
    agentSocket: join(runDir, 'agent.sock'),
    qmpSocket: join(runDir, 'qmp.sock'),
    consoleLog: files.consoleLog,
    pidFile: files.pidFile,
    ...(network ? { network: { tapName: TAP_NAME, mac: macOf(spec.sandboxId) } } : {}),
    incoming: mode.kind === 'restore',
  });
  const pid = await launchQemu({ binary: host.qemuBinary, args, logPath: files.qemuLog, cgroupProcs, ...(network ? { netnsPath: network.netnsPath } : {}) });
  const exitedEarly = async (): Promise<AirlockError | undefined> => ((await isAlive(pid)) ? undefined : failedToStart(spec.sandboxId, files));
  let monitor;
  try {
    monitor = await host.monitor(spec.sandboxId, 30_000);
  } catch (error) {
    throw (await exitedEarly()) ?? error;
  }
  if (mode.kind === 'restore') {
    // Branches of a shared-memory image map its RAM file privately; only device state is in the stream.
    await monitor.execute('migrate-set-capabilities', { capabilities: [{ capability: 'x-ignore-shared', state: mode.manifest.kind === 'shared-memory' }] });
    await monitor.execute('migrate-incoming', { uri: `exec:cat ${shellQuote(join(mode.imageDir, DEVICE_STATE_FILE))}` });
    await waitForMigration(monitor, `restoring ${spec.sandboxId} from ${mode.imageDir}`);
    await monitor.execute('cont');
  }
  let agent;
  try {
    agent = await host.agent(spec.sandboxId, mode.kind === 'boot' ? host.bootTimeoutMs : RESTORE_AGENT_TIMEOUT_MS);
  } catch (error) {
    const early = await exitedEarly();
    if (early) throw early;
    const console = await tail(files.consoleLog);
    throw new AirlockError(isAirlockError(error) ? error.code : 'DRIVER_FAILED', `${(error as Error).message}${console ? `\nconsole:\n${console}` : ''}`, { cause: error });
  }
  if (mode.kind === 'restore') {
    // Before any process of the image runs again: its network where the new namespace is, then fresh entropy
    // and the spec's identity; only then is the workload (frozen at the checkpoint) thawed.
    if (network) {
      const moved = await agent.exec({ argv: [`${GUEST_TOOLBOX_DIR}/busybox`, 'sh', '-c', readdressScript(network)], cwd: '/', env: {}, timeoutMs: 30_000 }, { outsideWorkload: true });
      if (moved.exitCode !== 0) throw new AirlockError('DRIVER_FAILED', `moving the restored VM ${spec.sandboxId} to its new network failed (exit ${moved.exitCode})`);
    }
    const hostname = spec.identity?.hostname ?? (HOSTNAME.test(spec.hostname) ? spec.hostname : undefined);
    await agent.identity({ hostname, machineId: spec.identity?.machineId, entropy: spec.identity?.entropy ?? randomBytes(64) });
    await agent.thaw();
  }
  return entry;
}

/** Copies a sparse file, holes kept (and shared extents where the filesystem can reflink). */
function copySparse(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('cp', ['--reflink=auto', '--sparse=always', from, to], { timeout: 600_000 }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      reject(new AirlockError(/No space/.test(String(stderr)) ? 'DISK_FULL' : 'DRIVER_FAILED', `copying the memory image ${from}: ${String(stderr).trim() || error.message}`, { cause: error }));
    });
  });
}

/** Waits until an incoming or outgoing migration completed; DRIVER_FAILED with QEMU's reason otherwise. */
export async function waitForMigration(monitor: { execute<T>(command: string): Promise<T> }, doing: string): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const state = await monitor.execute<{ status?: string; 'error-desc'?: string }>('query-migrate');
    if (state.status === 'completed') return;
    if (state.status === 'failed' || state.status === 'cancelled') {
      throw new AirlockError('DRIVER_FAILED', `${doing} failed: QEMU's migration ${state.status}${state['error-desc'] ? ` (${state['error-desc']})` : ''}; see qemu.log in the VM's state dir`);
    }
    if (Date.now() > deadline) throw new AirlockError('DRIVER_FAILED', `${doing} did not finish within 600 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The last lines of a log (console or QEMU's), bounded, for error messages. */
export async function tail(path: string, lines = 15): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.split('\n').filter((line) => line.trim()).slice(-lines).join('\n').slice(-3000);
}

/** A single-quoted shell word (QEMU's `exec:` migration runs through /bin/sh). */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The VM's own small archive after the base initramfs: /airlock/config and the files it places read-only. */
async function configArchive(spec: SandboxSpec, root: 'persistent' | 'ephemeral', network: MachineNetworkAttachment | undefined): Promise<Buffer> {
  if (!HOSTNAME.test(spec.hostname)) {
    throw new AirlockError('INVALID_ARGUMENTS', `invalid hostname ${JSON.stringify(spec.hostname)}: use 1-63 letters, digits and '-' (not at either end)`);
  }
  const entries: NewcEntry[] = [{ kind: 'directory', path: 'airlock/files' }];
  const placed: string[] = [];
  for (const [index, file] of (spec.network?.files ?? []).entries()) {
    if (!/^\/[A-Za-z0-9._/-]+$/.test(file.sandboxPath) || file.sandboxPath.includes('..')) {
      throw new AirlockError('INVALID_ARGUMENTS', `network file path ${JSON.stringify(file.sandboxPath)} must be absolute, of letters, digits, '.', '_', '-' and '/'`);
    }
    entries.push({ kind: 'file', path: `airlock/files/${index}`, content: await readFile(file.hostPath) });
    placed.push(`${index} ${file.sandboxPath}`);
  }
  const config = [
    `AIRLOCK_ROOT_MODE=${root}`,
    `AIRLOCK_MAX_PROCESSES=${Math.floor(spec.resources.maxProcesses)}`,
    `AIRLOCK_HOSTNAME=${spec.hostname}`,
    `AIRLOCK_NET_ADDRESS=${network ? `${network.address}/${network.prefixLength}` : ''}`,
    `AIRLOCK_NET_GATEWAY=${network?.gateway ?? ''}`,
    `AIRLOCK_FILES=${shellQuote(placed.join('\n'))}`,
  ];
  entries.push({ kind: 'file', path: 'airlock/config', content: Buffer.from(`${config.join('\n')}\n`) });
  return newcArchive(entries);
}

async function failedToStart(sandboxId: string, files: ReturnType<typeof machineFiles>): Promise<AirlockError> {
  const qemu = await tail(files.qemuLog);
  const console = await tail(files.consoleLog);
  const kernelDied = /Kernel panic|airlock-init: failed/.test(console);
  return new AirlockError(
    'DRIVER_FAILED',
    kernelDied
      ? `the guest of ${sandboxId} stopped while booting:\n${console}\nCheck the guest kernel (scripts/fetch-microvm-kernel.sh fetches Debian's) and the image`
      : `QEMU exited while starting ${sandboxId}: ${qemu || console || 'no output'}`,
    { details: { sandboxId } },
  );
}

/** A locally administered MAC address, stable per sandbox. */
function macOf(sandboxId: string): string {
  let hash = 0;
  for (const char of sandboxId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  const bytes = [0x52, 0x54, 0x00, (hash >>> 16) & 0xff, (hash >>> 8) & 0xff, hash & 0xff];
  return bytes.map((byte) => byte.toString(16).padStart(2, '0')).join(':');
}
