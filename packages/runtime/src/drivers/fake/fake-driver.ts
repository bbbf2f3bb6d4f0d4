/**
 * A driver that runs nothing: it records calls and answers from a handler.
 * For fast unit tests of the core only; every user-facing behaviour is also
 * tested against the gVisor driver.
 */
import type { Duplex } from 'node:stream';
import { AirlockError } from '../../core/errors.js';
import {
  type SandboxHealth,
  type SandboxProcess,
  type SandboxTerminal,
  type TerminalRequest,
  type CheckpointResult,
  type DriverCapabilities,
  type DriverVolumes,
  type SandboxPurpose,
  type ExecOutcome,
  type ExecRequest,
  type SandboxDriver,
  type SandboxHandle,
  type SandboxIdentity,
  type SandboxListing,
  type SandboxResources,
  type SandboxSpec,
  type SandboxUsage,
  type SandboxVolume,
  blockDeviceOf,
  directoryOf,
} from '../../core/sandbox-driver.js';
import { FakeFiles } from './fake-files.js';

/** Answer of the fake to one exec. */
export interface FakeExecAnswer {
  exitCode?: number;
  /** text, or bytes for binary output */
  stdout?: string | Buffer;
  stderr?: string;
  /** the pid a detached command reports */
  pid?: number;
}

/** How a fake presents itself: its name, capabilities and volume forms (to stand in for any driver). */
export interface FakeDriverOptions {
  name?: string;
  capabilities?: Partial<DriverCapabilities>;
  volumes?: DriverVolumes;
}

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** A recording, scriptable driver. */
export class FakeDriver implements SandboxDriver {
  readonly specificationVersion = 'v2' as const;
  readonly name: string;
  readonly capabilities: DriverCapabilities;
  readonly volumes: DriverVolumes;
  /** file operations on the session disk dir of each sandbox (see fake-files.ts) */
  readonly files = new FakeFiles((handle) => {
    const root = this.roots.get(handle.sandboxId);
    if (!root) throw new Error(`fake sandbox ${handle.sandboxId} is not running`);
    return root;
  });
  private readonly roots = new Map<string, string>();
  /** every exec, in order */
  readonly execs: { sandboxId: string; argv: string[]; detach?: { logPath?: string } }[] = [];
  readonly sandboxes = new Map<string, 'running' | 'paused'>();
  /** the session each sandbox was made for */
  readonly owners = new Map<string, string>();
  /** identity given to each sandbox by `personalize` */
  readonly identities = new Map<string, { hostname: string; machineId: string }>();
  /** answers execs; by default: exit 0, stdout = the last argv element */
  handler: (argv: string[]) => FakeExecAnswer = (argv) => ({ stdout: argv.at(-1) ?? '' });
  /** answers `connect`; by default nothing listens anywhere */
  connectHandler: (sandboxId: string, port: number) => Duplex = (sandboxId, port) => {
    throw new AirlockError('PORT_UNREACHABLE', `nothing listens on port ${port} in fake sandbox ${sandboxId}`);
  };

  constructor(options: FakeDriverOptions = {}) {
    this.name = options.name ?? 'fake';
    this.capabilities = { snapshot: true, fork: true, network: false, resize: true, pause: true, sharedDisk: true, terminal: false, ...options.capabilities };
    this.volumes = options.volumes ?? { rootfs: 'directory', disk: 'directory' };
  }

  async checkHost(): Promise<void> {}

  sandboxIdFor(purpose: SandboxPurpose): string {
    return purpose.purpose === 'machine' ? `fake-${purpose.sessionId}-g${purpose.generation}` : `fake-${purpose.sessionId}-run-${purpose.nonce}`;
  }

  async start(spec: SandboxSpec): Promise<SandboxHandle> {
    this.checkVolumes(spec);
    if (this.sandboxes.has(spec.sandboxId)) throw new AirlockError('INVALID_STATE', `fake sandbox ${spec.sandboxId} already exists; use a new sandboxId`);
    this.sandboxes.set(spec.sandboxId, 'running');
    // Unit tests hand a directory for either volume form: it stands for the disk's contents.
    this.roots.set(spec.sandboxId, spec.disk.path);
    this.owners.set(spec.sandboxId, spec.sessionId);
    return { sandboxId: spec.sandboxId, sessionId: spec.sessionId, driver: this.name, driverData: {} };
  }

  async exec(handle: SandboxHandle, request: ExecRequest): Promise<ExecOutcome> {
    if (!this.sandboxes.has(handle.sandboxId)) throw new Error(`fake sandbox ${handle.sandboxId} is not running`);
    return this.answer(handle.sandboxId, request);
  }

  async runOnce(spec: SandboxSpec, request: Omit<ExecRequest, 'argv'>): Promise<ExecOutcome> {
    this.checkVolumes(spec);
    return this.answer(spec.sandboxId, { ...request, argv: spec.oneShot?.argv ?? [] });
  }

  async checkpoint(handle: SandboxHandle, imageDir: string, options: { leaveRunning: boolean }): Promise<CheckpointResult> {
    if (!options.leaveRunning) this.sandboxes.delete(handle.sandboxId);
    return { imageDir, bytes: 0, durationMs: 0 };
  }

  async restore(spec: SandboxSpec): Promise<SandboxHandle> {
    return this.start(spec);
  }

  async adopt(handle: SandboxHandle, to: { sessionId: string; disk: SandboxVolume }): Promise<SandboxHandle> {
    if (!this.sandboxes.has(handle.sandboxId)) throw new Error(`fake sandbox ${handle.sandboxId} is not running`);
    this.owners.set(handle.sandboxId, to.sessionId);
    this.roots.set(handle.sandboxId, to.disk.path);
    return { ...handle, sessionId: to.sessionId };
  }

  async personalize(handle: SandboxHandle, identity: SandboxIdentity): Promise<void> {
    if (!this.sandboxes.has(handle.sandboxId)) throw new Error(`fake sandbox ${handle.sandboxId} is not running`);
    if (!HOSTNAME.test(identity.hostname) || !/^[0-9a-f]{32}$/.test(identity.machineId)) {
      throw new AirlockError('INVALID_ARGUMENTS', 'invalid identity: hostname is 1-63 letters, digits and -, machineId 32 lowercase hex digits');
    }
    this.identities.set(handle.sandboxId, { hostname: identity.hostname, machineId: identity.machineId });
  }

  async pause(handle: SandboxHandle): Promise<void> {
    this.sandboxes.set(handle.sandboxId, 'paused');
  }

  async unpause(handle: SandboxHandle): Promise<void> {
    this.sandboxes.set(handle.sandboxId, 'running');
  }

  async resize(_handle: SandboxHandle, _resources: Pick<SandboxResources, 'cpus' | 'memoryMb'>): Promise<void> {}

  async usage(): Promise<SandboxUsage> {
    return { cpuSeconds: 0, memoryBytes: 0, peakMemoryBytes: 0 };
  }

  async status(handle: SandboxHandle): Promise<SandboxListing['status'] | 'missing'> {
    return this.sandboxes.get(handle.sandboxId) ?? 'missing';
  }

  async destroy(handle: SandboxHandle): Promise<void> {
    this.sandboxes.delete(handle.sandboxId);
    this.roots.delete(handle.sandboxId);
    this.owners.delete(handle.sandboxId);
  }

  async health(handle: SandboxHandle): Promise<SandboxHealth> {
    const status = this.sandboxes.get(handle.sandboxId);
    return status === 'running' ? { answering: true, latencyMs: 0 } : { answering: false, reason: status ?? 'missing' };
  }

  /** The fake runs no processes. */
  async processes(handle: SandboxHandle): Promise<SandboxProcess[]> {
    if (!this.sandboxes.has(handle.sandboxId)) throw new Error(`fake sandbox ${handle.sandboxId} is not running`);
    return [];
  }

  async signal(_handle: SandboxHandle, pid: number): Promise<void> {
    throw new AirlockError('NOT_FOUND', `no process ${pid} in the sandbox (the fake driver runs none)`, { details: { pid } });
  }

  async openTerminal(_handle: SandboxHandle, _request: TerminalRequest): Promise<SandboxTerminal> {
    throw new AirlockError('DRIVER_UNAVAILABLE', 'the fake driver declares no terminal capability');
  }

  async connect(handle: SandboxHandle, port: number): Promise<Duplex> {
    if (this.sandboxes.get(handle.sandboxId) !== 'running') throw new Error(`fake sandbox ${handle.sandboxId} is not running`);
    return this.connectHandler(handle.sandboxId, port);
  }

  async list(): Promise<SandboxListing[]> {
    return [...this.sandboxes].map(([sandboxId, status]) => {
      const sessionId = this.owners.get(sandboxId);
      return sessionId === undefined ? { sandboxId, status } : { sandboxId, status, sessionId };
    });
  }

  /** Refuses volumes in another form than this fake declares, as a real driver would. */
  private checkVolumes(spec: SandboxSpec): void {
    (this.volumes.rootfs === 'directory' ? directoryOf : blockDeviceOf)(spec.rootfs, 'rootfs');
    (this.volumes.disk === 'directory' ? directoryOf : blockDeviceOf)(spec.disk, 'disk');
  }

  private answer(sandboxId: string, request: ExecRequest): ExecOutcome {
    this.execs.push({ sandboxId, argv: request.argv, ...(request.detach ? { detach: request.detach } : {}) });
    const answer = this.handler(request.argv);
    if (answer.stdout) request.onStdout?.(Buffer.isBuffer(answer.stdout) ? answer.stdout : Buffer.from(answer.stdout));
    if (answer.stderr) request.onStderr?.(Buffer.from(answer.stderr));
    return { exitCode: answer.exitCode ?? 0, timedOut: false, aborted: false, durationMs: 1, ...(request.detach && answer.pid ? { pid: answer.pid } : {}) };
  }
}
