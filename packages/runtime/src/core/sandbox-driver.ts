/**
 * The port between the control plane and an isolation technology. A driver
 * never sees HTTP, policy or the store; the control plane never runs `runsc`
 * or `qemu` itself. Every driver passes `drivers/conformance`.
 *
 * Specification v2 (v1 assumed host directories and core-made sandbox ids):
 * the root filesystem and the session disk are volumes, a host directory or
 * a block device, in the form the driver's `volumes` asks for; the driver
 * names its sandboxes (`sandboxIdFor`) and reports the session of each one
 * it lists, so core never parses an id; every handle carries its driver's
 * name; and `capabilities` says what core may rely on (pause, resize,
 * snapshot, fork, network, a disk shared live with per-call sandboxes,
 * terminals). Everything a call does inside a running sandbox goes through
 * the driver's own operations (exec with detach, `files`, `processes`,
 * `signal`, `openTerminal`, `health`), served by the in-sandbox agent; there
 * is no in-sandbox toolbox and no faster "transient" exec path.
 */
import type { Duplex } from 'node:stream';
import { AirlockError } from './errors.js';
import type { FilesystemRules } from './session-contract.js';
import type { SandboxFiles } from './sandbox-files.js';

/** What a driver can do, declared instead of throwing "not implemented". */
export interface DriverCapabilities {
  /** checkpoint memory + processes to an image and restore from it */
  snapshot: boolean;
  /** restore one checkpoint image into several independent sandboxes */
  fork: boolean;
  /** per-sandbox network namespace behind the egress gateway */
  network: boolean;
  /** change CPU / memory limits of a running sandbox in place */
  resize: boolean;
  /** freeze in place (no CPU, memory kept) and thaw */
  pause: boolean;
  /**
   * per-call sandboxes may use the session disk while the session's machine runs (the disk is a
   * host directory both see live); false: one sandbox at a time holds the disk (a block device)
   */
  sharedDisk: boolean;
  /** commands on a pseudo-terminal (`openTerminal`) */
  terminal: boolean;
}

/** A filesystem handed to a sandbox: a host directory, or an image file the driver attaches as a block device. */
export type SandboxVolume = { kind: 'directory'; path: string } | { kind: 'block-device'; path: string };

/** The forms of root filesystem and session disk a driver takes. */
export interface DriverVolumes {
  /** `directory`: the image's root tree; `block-device`: an ext4 image of it (read-only) */
  rootfs: SandboxVolume['kind'];
  /** `directory`: the mounted session disk; `block-device`: its unmounted ext4 image file */
  disk: SandboxVolume['kind'];
}

/** The host path of a volume a driver takes as a directory; INVALID_ARGUMENTS for any other form. */
export function directoryOf(volume: SandboxVolume, what: string): string {
  if (volume.kind !== 'directory') {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `${what} must be a host directory for this driver, got a ${volume.kind} (${volume.path}); describe it as { kind: 'directory' }`,
    );
  }
  return volume.path;
}

/** The image file of a volume a driver attaches as a block device; INVALID_ARGUMENTS for any other form. */
export function blockDeviceOf(volume: SandboxVolume, what: string): string {
  if (volume.kind !== 'block-device') {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `${what} must be a block device (an image file) for this driver, got a ${volume.kind} (${volume.path}); describe it as { kind: 'block-device' }`,
    );
  }
  return volume.path;
}

/** What a sandbox is for, so its driver can name it. */
export type SandboxPurpose = { sessionId: string; purpose: 'machine'; generation: number } | { sessionId: string; purpose: 'per-call'; nonce: string };

/** Resource limits of one sandbox. */
export interface SandboxResources {
  cpus: number;
  memoryMb: number;
  /** graceful in-sandbox process limit (RLIMIT_NPROC); the host pids cgroup is a backstop only */
  maxProcesses: number;
  diskMb: number;
}

/** Everything a driver needs to start (or restore) one sandbox. */
export interface SandboxSpec {
  /** globally unique id of this sandbox incarnation (a new one after each restore) */
  sandboxId: string;
  /** the session it belongs to, for labels and cleanup */
  sessionId: string;
  /** read-only root filesystem of the image, in the form `DriverVolumes.rootfs` names */
  rootfs: SandboxVolume;
  /** the session's writable disk, in the form `DriverVolumes.disk` names; the driver keeps its layers and /workspace on it */
  disk: SandboxVolume;
  /** host directory for the driver's own per-sandbox files (bundle, logs) */
  stateDir: string;
  hostname: string;
  resources: SandboxResources;
  /** environment of every process started in the sandbox */
  env: Record<string, string>;
  /** run the given argv once and exit instead of starting a long-lived machine */
  oneShot?: { argv: string[] };
  /**
   * A throw-away machine over the session disk (per-call file work): its
   * root layer lives in memory and goes with it; only /workspace persists.
   */
  scratch?: boolean;
  /** absent: no network at all (loopback only); present: a namespace whose only way out is the egress gateway */
  network?: SandboxNetwork;
  /**
   * The contract's filesystem rules, for drivers that enforce them with the sandbox's own mounts
   * (read-only, masked, writable); absent: no rules. They never change for a session, so every
   * incarnation (start, restore, fork branch, per-call sandbox) gets the same mounts.
   */
  filesystem?: FilesystemRules;
  /**
   * restore only. Present: the sandbox is a fork branch of the image (it may share the image's memory
   * with its sibling branches), and this is the identity it gets before any of its processes runs again
   * (drivers that can hold the workload until then apply it; `personalize` follows in any case).
   * Absent: the image's own machine resumes; it keeps its identity, with fresh entropy where its kernel
   * keeps a random pool.
   */
  identity?: SandboxIdentity;
}

/**
 * The network of a sandbox whose only reachable endpoint is the egress
 * gateway on the host. Made by the control plane's egress layer; the driver
 * builds the namespace, the veth and the firewall from it.
 */
export interface SandboxNetwork {
  /** IPv4 address of the gateway, the sandbox's default route; the same for every sandbox of the session */
  gatewayAddress: string;
  /** IPv4 CIDR the driver takes a free sandbox address from */
  addressPool: string;
  /** prefix length of the sandbox's address; the gateway address lies inside it */
  prefixLength: number;
  /** the only gateway ports the sandbox may reach */
  gatewayPorts: { tcp: readonly number[]; udp: readonly number[] };
  /** host files the sandbox sees read-only at these paths (resolv.conf, CA bundle): bind-mounted, or copied into a VM at boot; skipped when the image lacks the path */
  files: readonly { hostPath: string; sandboxPath: string }[];
}

/** A running sandbox, as the driver knows it. Serializable: it is stored. */
export interface SandboxHandle {
  sandboxId: string;
  sessionId: string;
  /** name of the driver that made it; absent in handles stored before driver spec v2 (those are gvisor's) */
  driver?: string;
  /** driver-specific data needed to find it again after a restart of the control plane */
  driverData: Record<string, unknown>;
}

/** One command to run in a sandbox. */
export interface ExecRequest {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdin?: Uint8Array;
  timeoutMs: number;
  /** aborting kills the command (client disconnected) */
  signal?: AbortSignal;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /**
   * Start the command in its own session and answer at once with its pid
   * (a service); its output goes to `logPath` (made with its parents), or
   * nowhere. A command that cannot start fails the call as usual.
   */
  detach?: { logPath?: string };
}

/** How a command ended. */
export interface ExecOutcome {
  exitCode: number;
  /** true when the command was killed because it ran past its timeout */
  timedOut: boolean;
  /** true when the command was killed because its caller went away */
  aborted: boolean;
  durationMs: number;
  /** of durationMs, the time before the command itself started (sandbox boot, exec setup), when the driver knows it */
  startMs?: number;
  /** the pid of a detached command that started */
  pid?: number;
}

/** Host resource use of one sandbox, for metering. */
export interface SandboxUsage {
  cpuSeconds: number;
  memoryBytes: number;
  peakMemoryBytes: number;
}

/** A sandbox the driver finds on the host, for reconciliation after a crash. */
export interface SandboxListing {
  sandboxId: string;
  status: 'running' | 'paused' | 'stopped' | 'unknown';
  /** the session it was made for, when the driver knows it (it names and records its sandboxes) */
  sessionId?: string;
}

/** Result of a checkpoint: where the image is and how big it is. */
export interface CheckpointResult {
  imageDir: string;
  bytes: number;
  durationMs: number;
}

/** A fresh identity for a sandbox restored from a shared image (a fork branch). */
export interface SandboxIdentity {
  /** UTS hostname: letters, digits and '-', at most 63 */
  hostname: string;
  /** 32 lowercase hex digits, written to /etc/machine-id */
  machineId: string;
  /** host randomness mixed into the sandbox's kernel RNG */
  entropy: Uint8Array;
}

/** One process inside a sandbox. */
export interface SandboxProcess {
  pid: number;
  parentPid: number;
  /** process group */
  group: number;
  /** one letter, as in /proc/PID/stat: R, S, D, T, Z… */
  state: string;
  /** the kernel's short name of the program */
  name: string;
  argv: string[];
}

/** Whether the machine's command slot answers (a live sandbox can still be wedged). */
export interface SandboxHealth {
  answering: boolean;
  /** round trip of the probe, when it answered */
  latencyMs?: number;
  /** why not: paused, stopped, no-agent, protocol, timeout… */
  reason?: string;
  /** what the driver did to bring it back (e.g. "continued a stopped agent") */
  repaired?: string;
}

/** A command to run on a pseudo-terminal. */
export interface TerminalRequest {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  rows: number;
  columns: number;
}

/** An interactive command: bytes in and out through `stream`. */
export interface SandboxTerminal {
  /** write keystrokes, read the terminal's output; destroying it kills the command */
  stream: Duplex;
  resize(rows: number, columns: number): void;
  /** sends a signal (default SIGKILL) to the command's process group */
  kill(signal?: number): void;
  /** settles when the command ended */
  exited: Promise<ExecOutcome>;
}

/** The versioned sandbox driver contract. */
export interface SandboxDriver {
  readonly specificationVersion: 'v2';
  /** what sessions choose it by (`sandbox` in the contract), and what every handle it makes carries */
  readonly name: string;
  readonly capabilities: DriverCapabilities;
  /** the forms of root filesystem and session disk `start`, `restore` and `runOnce` take */
  readonly volumes: DriverVolumes;
  /** File operations inside running sandboxes, resolved by the sandbox's own view (sandbox-files.ts). */
  readonly files: SandboxFiles;

  /** What this driver runs sandboxes with (a guest kernel's digest, the accelerator, a runtime version), for the audit log. */
  describeRuntime?(): Promise<Record<string, string>>;
  /** The id of a new sandbox (letters, digits, '.', '_', '-'): unique per purpose, the driver's own format. */
  sandboxIdFor(purpose: SandboxPurpose): string;
  /** Releases what the driver holds in this process (connections to its sandboxes); the sandboxes run on. */
  close?(): Promise<void>;
  /** Checks the host can run this driver; throws DRIVER_UNAVAILABLE with the fix. */
  checkHost(): Promise<void>;
  /** Starts a long-lived sandbox. */
  start(spec: SandboxSpec): Promise<SandboxHandle>;
  /** Runs one command inside a running sandbox. */
  exec(handle: SandboxHandle, request: ExecRequest): Promise<ExecOutcome>;
  /**
   * Runs `spec.oneShot` in a fresh sandbox that is destroyed when it ends (possibly after the outcome is
   * returned, in the background: `close` waits for those teardowns, and a crash leaves an orphan for `list`).
   */
  runOnce(spec: SandboxSpec, request: Omit<ExecRequest, 'argv'>): Promise<ExecOutcome>;
  /** Saves memory and processes to `imageDir`; stops the sandbox unless leaveRunning. */
  checkpoint(handle: SandboxHandle, imageDir: string, options: { leaveRunning: boolean }): Promise<CheckpointResult>;
  /** Starts a sandbox from a checkpoint image. */
  restore(spec: SandboxSpec, imageDir: string): Promise<SandboxHandle>;
  /**
   * Hands a running sandbox started for a warm pool to the session that claims it: from then on the
   * handle, the driver's own records and `list()` name that session, and the sandbox's disk is the one at
   * `disk` (the pool's disk, moved under the session's name while the sandbox runs). Only drivers whose
   * disk can move under a running sandbox have it; without it, sessions of that driver start cold.
   */
  adopt?(handle: SandboxHandle, to: { sessionId: string; disk: SandboxVolume }): Promise<SandboxHandle>;
  /** Gives a restored sandbox its own hostname, machine id and RNG state (branches of one image share them). */
  personalize(handle: SandboxHandle, identity: SandboxIdentity): Promise<void>;
  /** Freezes the sandbox in place (only when `capabilities.pause`). */
  pause(handle: SandboxHandle): Promise<void>;
  /** Thaws a paused sandbox. */
  unpause(handle: SandboxHandle): Promise<void>;
  /** Changes CPU and memory limits of a running sandbox (only when `capabilities.resize`). */
  resize(handle: SandboxHandle, resources: Pick<SandboxResources, 'cpus' | 'memoryMb'>): Promise<void>;
  /** Host resource use. */
  usage(handle: SandboxHandle): Promise<SandboxUsage>;
  /** Whether the sandbox is alive. */
  status(handle: SandboxHandle): Promise<SandboxListing['status'] | 'missing'>;
  /** Whether a live sandbox's command slot answers; repairs what it safely can (a stopped agent). */
  health(handle: SandboxHandle): Promise<SandboxHealth>;
  /** Every process of a running sandbox. */
  processes(handle: SandboxHandle): Promise<SandboxProcess[]>;
  /** Sends a signal (name or number) to one process of a running sandbox. */
  signal(handle: SandboxHandle, pid: number, signal: string | number): Promise<void>;
  /** Starts a command on a pseudo-terminal (capability `terminal`). */
  openTerminal(handle: SandboxHandle, request: TerminalRequest): Promise<SandboxTerminal>;
  /**
   * Kills and removes the sandbox and everything the driver made for it (idempotent). Works from
   * the sandbox id alone (empty driverData): a crash may have left a sandbox whose handle was never stored.
   */
  destroy(handle: SandboxHandle): Promise<void>;
  /** Sandboxes of this driver that exist on the host, half-made ones (a crash mid-start) included. */
  list(): Promise<SandboxListing[]>;
  /**
   * A byte stream to TCP `port` on the sandbox's own loopback (the sandbox
   * has no network of its own). Ending the writable side half-closes the
   * connection; destroying the stream closes it. Fails with PORT_UNREACHABLE
   * when nothing listens there (at once, or on the stream's first read).
   */
  connect(handle: SandboxHandle, port: number): Promise<Duplex>;
}
