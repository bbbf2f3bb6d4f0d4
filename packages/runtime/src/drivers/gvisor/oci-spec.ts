/**
 * Builds the OCI `config.json` of a gVisor sandbox. One function for the
 * long-lived machine, the per-call sandbox and restore, so their mounts never
 * drift apart (restore needs the same mounts as the checkpointed sandbox).
 * The first process is always the agent (docs/agent-protocol.md).
 */
import type { SandboxResources } from '../../core/sandbox-driver.js';
import { cgroupPathOf, CPU_PERIOD_US, cpuQuotaUs, pidsBackstop } from './cgroups.js';
import { AGENT_HOST_DIR, AGENT_PATH } from './agent-endpoint.js';
import type { OciMount } from './filesystem-mount-sources.js';

/** Mount point of the session workspace inside every sandbox. */
export const WORKSPACE_PATH = '/workspace';
/** PATH given to processes when the spec's env has none. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Inputs of `buildOciSpec`. */
export interface OciSpecInput {
  sandboxId: string;
  /** the root the sandbox sees: the read-only rootfs view, absolute */
  rootPath: string;
  /** host directory bind-mounted read-write at /workspace */
  workspaceHostDir: string;
  /** host path of the agent binary, bind-mounted read-only at AGENT_PATH */
  agentHostPath: string;
  /** host directory of the agent's socket, bind-mounted at AGENT_HOST_DIR */
  agentSocketDir: string;
  hostname: string;
  env: Record<string, string>;
  resources: SandboxResources;
  /** RLIMIT_NPROC of the agent; its commands get resources.maxProcesses */
  processLimit: number;
  /** network namespace to run in (a networked sandbox); absent: a new, empty one */
  netnsPath?: string;
  /** host files bind-mounted read-only over existing sandbox files (resolv.conf, CA bundle) */
  files?: readonly { hostPath: string; sandboxPath: string }[];
  /** the contract's filesystem rules as mounts (filesystem-mounts.ts); absent: none */
  rules?: RuleMounts;
}

/** What the contract's filesystem rules change in a spec. */
export interface RuleMounts {
  rootReadonly: boolean;
  workspaceReadonly: boolean;
  /** /tmp as its own tmpfs, when the rules need one */
  tmp?: OciMount;
  /** outermost first, after /workspace and before the network's files */
  mounts: readonly OciMount[];
  /** parents of the mounts outside /workspace, which the agent binds onto itself at boot (not in the spec: agent/src/pins.c) */
  pins: readonly string[];
}

/** Capabilities of the session's processes: runsc's defaults, root inside but without CAP_SYS_RESOURCE/SYS_ADMIN, so RLIMIT_NPROC binds. */
export const SESSION_CAPABILITIES = ['CAP_AUDIT_WRITE', 'CAP_KILL', 'CAP_NET_BIND_SERVICE'];
/**
 * What only the agent holds on top, outside its effective set except for the
 * one call that needs each, and dropped by every child (agent/src/system.c):
 * mounts and hostname, its socket's directory, its children's bounding set.
 */
export const AGENT_ONLY_CAPABILITIES = ['CAP_SYS_ADMIN', 'CAP_DAC_OVERRIDE', 'CAP_SETPCAP'];

/** The OCI runtime spec for one sandbox: the agent is its first process. */
export function buildOciSpec(input: OciSpecInput): Record<string, unknown> {
  const env = { PATH: DEFAULT_PATH, HOME: '/root', ...input.env };
  const agent = [...SESSION_CAPABILITIES, ...AGENT_ONLY_CAPABILITIES];
  return {
    ociVersion: '1.0.0',
    process: {
      user: { uid: 0, gid: 0 },
      // Identical for run and restore: restore checks the spec's process against the image.
      args: [AGENT_PATH],
      env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
      cwd: '/',
      capabilities: { bounding: agent, effective: agent, inheritable: SESSION_CAPABILITIES, permitted: agent },
      rlimits: [
        { type: 'RLIMIT_NOFILE', hard: 65536, soft: 65536 },
        // The graceful process limit: fork() fails with EAGAIN instead of the sandbox dying (pitfall 8).
        { type: 'RLIMIT_NPROC', hard: input.processLimit, soft: input.processLimit },
      ],
      noNewPrivileges: true,
    },
    // Writable unless the rules say otherwise: with a read-only root runsc disables the rootfs overlay and writes
    // fail with EROFS, which is what `filesystem.allowWrite` without `/` asks for. Otherwise the overlay
    // (--overlay2=root:...) absorbs every write; the view underneath is a read-only mount anyway.
    root: { path: input.rootPath, readonly: input.rules?.rootReadonly ?? false },
    hostname: input.hostname,
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs' },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      { destination: WORKSPACE_PATH, type: 'bind', source: input.workspaceHostDir, options: ['rbind', input.rules?.workspaceReadonly ? 'ro' : 'rw'] },
      { destination: AGENT_PATH, type: 'bind', source: input.agentHostPath, options: ['rbind', 'ro'] },
      { destination: AGENT_HOST_DIR, type: 'bind', source: input.agentSocketDir, options: ['rbind', 'rw'] },
      ...(input.rules?.tmp ? [input.rules.tmp] : []),
      ...(input.rules?.mounts ?? []),
      ...(input.files ?? []).map((file) => ({ destination: file.sandboxPath, type: 'bind', source: file.hostPath, options: ['rbind', 'ro'] })),
    ],
    linux: {
      cgroupsPath: cgroupPathOf(input.sandboxId),
      resources: {
        memory: { limit: input.resources.memoryMb * 1024 * 1024 },
        cpu: { quota: cpuQuotaUs(input.resources.cpus), period: CPU_PERIOD_US },
        pids: { limit: pidsBackstop(input.resources.maxProcesses) },
      },
      namespaces: [
        { type: 'pid' },
        { type: 'network', ...(input.netnsPath ? { path: input.netnsPath } : {}) },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
      ],
    },
  };
}
