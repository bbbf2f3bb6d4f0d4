/**
 * Builds the OCI `config.json` of a gVisor sandbox. One function for the
 * long-lived machine, the per-call sandbox and restore, so their mounts never
 * drift apart (restore needs the same mounts as the checkpointed sandbox).
 */
import type { SandboxResources } from '../../core/sandbox-driver.js';
import { cgroupPathOf, CPU_PERIOD_US, cpuQuotaUs, pidsBackstop } from './cgroups.js';
import type { OciMount } from './filesystem-mount-sources.js';
import { RUN_DIR, TOOLBOX_PATH } from './in-sandbox-scripts.js';
import { sandboxSeccompProfile } from './sandbox-seccomp.js';

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
  /** host path of the static busybox bind-mounted at TOOLBOX_PATH */
  toolboxHostPath: string;
  hostname: string;
  env: Record<string, string>;
  resources: SandboxResources;
  args: string[];
  cwd: string;
  /** RLIMIT_NPROC of the first process; defaults to resources.maxProcesses */
  processLimit?: number;
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
}

/** The OCI runtime spec for one sandbox. */
export function buildOciSpec(input: OciSpecInput): Record<string, unknown> {
  const env = { PATH: DEFAULT_PATH, HOME: '/root', ...input.env };
  const capabilities = ['CAP_AUDIT_WRITE', 'CAP_KILL', 'CAP_NET_BIND_SERVICE'];
  return {
    ociVersion: '1.0.0',
    process: {
      user: { uid: 0, gid: 0 },
      args: input.args,
      env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
      cwd: input.cwd,
      // runsc's defaults: root inside, but without CAP_SYS_RESOURCE/SYS_ADMIN, so RLIMIT_NPROC binds.
      capabilities: { bounding: capabilities, effective: capabilities, inheritable: capabilities, permitted: capabilities },
      rlimits: [
        { type: 'RLIMIT_NOFILE', hard: 65536, soft: 65536 },
        // The graceful process limit: fork() fails with EAGAIN instead of the sandbox dying (pitfall 8).
        { type: 'RLIMIT_NPROC', hard: input.processLimit ?? input.resources.maxProcesses, soft: input.processLimit ?? input.resources.maxProcesses },
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
      { destination: TOOLBOX_PATH, type: 'bind', source: input.toolboxHostPath, options: ['rbind', 'ro'] },
      { destination: RUN_DIR, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=700'] },
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
      // Applied with runsc --oci-seccomp to the first process and everything it starts: no process may change the mounts.
      seccomp: sandboxSeccompProfile(),
      namespaces: [{ type: 'pid' }, { type: 'network', ...(input.netnsPath ? { path: input.netnsPath } : {}) }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }],
    },
  };
}
