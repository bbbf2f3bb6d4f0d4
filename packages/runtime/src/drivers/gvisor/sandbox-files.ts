/**
 * The host files of one gVisor sandbox and how they are made and removed.
 *
 *   <stateDir>/bundle/config.json   OCI spec (runsc's bundle dir)
 *   <stateDir>/rootfs/              read-only view of the image (mount point)
 *   <stateDir>/sandbox.log          stdio of runsc run/restore --detach
 *   <stateDir>/panic.log            Go panics of the sandbox, for SANDBOX_DIED reports
 *   <stateDir>/agent/               the agent's socket (agent-endpoint.ts), bind-mounted at /.airlock/host
 *   <diskDir>/overlay/              the rootfs overlay's filestore (on the session disk)
 *   <diskDir>/workspace/            bind-mounted at /workspace
 */
import { lstat, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import { directoryOf, type SandboxSpec } from '../../core/sandbox-driver.js';
import { prepareRules, ruleMountsOf } from './filesystem-mount-sources.js';
import { prepareAgentDirectory } from './agent-endpoint.js';
import { buildOciSpec } from './oci-spec.js';
import { mountRootfsView, unmountRootfsView } from './rootfs-view.js';

/** A sandbox's host files once made, and whether its spec mounts filesystem rules. */
export interface PreparedSandbox extends SandboxPaths {
  /** the spec carries rule mounts: runsc must serve them through its gofer (--directfs=false, see gvisor-driver.ts) */
  hasRuleMounts: boolean;
}

/** Paths of one sandbox's host files. */
export interface SandboxPaths {
  stateDir: string;
  bundleDir: string;
  rootfsView: string;
  logPath: string;
  panicLogPath: string;
  overlayDir: string;
  workspaceDir: string;
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The paths for a sandbox given its state dir and session disk. */
export function sandboxPaths(stateDir: string, diskDir: string): SandboxPaths {
  return {
    stateDir,
    bundleDir: join(stateDir, 'bundle'),
    rootfsView: join(stateDir, 'rootfs'),
    logPath: join(stateDir, 'sandbox.log'),
    panicLogPath: join(stateDir, 'panic.log'),
    overlayDir: join(diskDir, 'overlay'),
    workspaceDir: join(diskDir, 'workspace'),
  };
}

/** A spec whose volumes are host directories, the form this driver takes (see `GvisorDriver.volumes`). */
export type DirectorySpec = SandboxSpec & { rootfsDir: string; diskDir: string };

/** The spec with its root filesystem and disk as directories; INVALID_ARGUMENTS for block devices. */
export function directorySpec(spec: SandboxSpec): DirectorySpec {
  return { ...spec, rootfsDir: directoryOf(spec.rootfs, 'rootfs'), diskDir: directoryOf(spec.disk, 'disk') };
}

/** Rejects specs that would be unsafe as paths, ids or shell data, with the fix in the message. */
export function validateSpec(spec: DirectorySpec): void {
  if (!ID_PATTERN.test(spec.sandboxId)) {
    throw new AirlockError('INVALID_ARGUMENTS', `invalid sandboxId ${JSON.stringify(spec.sandboxId)}: use up to 64 letters, digits, '.', '_' and '-'`);
  }
  for (const [name, value] of Object.entries({ rootfsDir: spec.rootfsDir, diskDir: spec.diskDir, stateDir: spec.stateDir })) {
    if (!value.startsWith('/')) throw new AirlockError('INVALID_ARGUMENTS', `${name} must be an absolute path (got ${value})`);
  }
  const { cpus, memoryMb, maxProcesses } = spec.resources;
  if (!(cpus > 0) || !(memoryMb >= 32) || !Number.isInteger(memoryMb) || !(maxProcesses >= 8) || !Number.isInteger(maxProcesses)) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `invalid resources ${JSON.stringify(spec.resources)}: need cpus > 0, memoryMb >= 32 and maxProcesses >= 8 (whole numbers)`,
    );
  }
  validateEnv(spec.env);
}

/** Environment names must be shell identifiers and nothing may contain NUL. */
export function validateEnv(env: Record<string, string>): void {
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name) || value.includes('\0')) {
      throw new AirlockError(
        'INVALID_ARGUMENTS',
        `invalid environment variable ${JSON.stringify(name)}: names are letters, digits and '_', values have no NUL`,
      );
    }
  }
}

/**
 * Makes every host file the sandbox needs: state dir, the session disk's
 * overlay and workspace dirs, the rootfs view and the bundle.
 */
export async function prepareSandboxFiles(options: {
  spec: DirectorySpec;
  skeletonDir: string;
  agentHostPath: string;
  env: Record<string, string>;
  /** RLIMIT_NPROC of the agent */
  processLimit: number;
  /** the sandbox's network namespace, when it has a network */
  netnsPath?: string;
  /** mount the spec's filesystem rules (false only to restore an image taken before they existed) */
  ruleMounts: boolean;
}): Promise<PreparedSandbox> {
  const { spec } = options;
  const paths = sandboxPaths(spec.stateDir, spec.diskDir);
  if (!(await isDirectory(spec.rootfsDir))) {
    throw new AirlockError('IMAGE_NOT_FOUND', `image rootfs ${spec.rootfsDir} does not exist; build or import the image first`);
  }
  if (!(await isDirectory(spec.diskDir))) {
    throw new AirlockError('INVALID_STATE', `session disk ${spec.diskDir} is not there; mount it first (SessionDisks.ensureMounted)`);
  }
  await mkdir(paths.bundleDir, { recursive: true });
  await mkdir(paths.overlayDir, { recursive: true });
  await mkdir(paths.workspaceDir, { recursive: true });
  const prepared = options.ruleMounts ? await prepareRules(spec.filesystem, spec.rootfsDir, spec.stateDir) : undefined;
  const agentSocketDir = await prepareAgentDirectory(spec.stateDir);
  await mountRootfsView({
    skeletonDir: options.skeletonDir,
    rootfsDir: spec.rootfsDir,
    target: paths.rootfsView,
    ...(prepared?.mountPointsDir ? { mountPointsDir: prepared.mountPointsDir } : {}),
  });
  const layout = { workspaceHostDir: paths.workspaceDir, rootfsView: paths.rootfsView, diskDir: spec.diskDir, stateDir: spec.stateDir };
  const rules = prepared ? await ruleMountsOf(prepared, layout) : undefined;
  // The rules' parents outside /workspace, which the agent pins at boot (agent/src/pins.c); only the agent can enter this directory.
  const pinsFile = join(agentSocketDir, 'pins');
  if (rules && rules.pins.length > 0) await writeFile(pinsFile, rules.pins.map((path) => `${path}\0`).join(''), { mode: 0o600 });
  else await rm(pinsFile, { force: true });
  const config = buildOciSpec({
    sandboxId: spec.sandboxId,
    rootPath: paths.rootfsView,
    workspaceHostDir: paths.workspaceDir,
    agentHostPath: options.agentHostPath,
    agentSocketDir,
    hostname: spec.hostname,
    env: options.env,
    resources: spec.resources,
    processLimit: options.processLimit,
    ...(rules === undefined ? {} : { rules }),
    ...(options.netnsPath === undefined ? {} : { netnsPath: options.netnsPath, files: await existingFiles(spec) }),
  });
  await writeFile(join(paths.bundleDir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  return { ...paths, hasRuleMounts: rules !== undefined };
}

/** Unmounts the view and deletes the state dir; idempotent. The session disk is left alone. */
export async function removeSandboxFiles(stateDir: string): Promise<void> {
  await unmountRootfsView(join(stateDir, 'rootfs'));
  await rm(stateDir, { recursive: true, force: true });
}

/** Last lines of a log file, for error messages; empty when it does not exist. */
export async function logTail(path: string, lines = 8): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.trim().split('\n').slice(-lines).join('\n').slice(-3000);
}

/**
 * Host pids of runsc processes that belong to a sandbox (sandbox, gofer, exec),
 * found by the bundle path or container id on their command lines.
 */
export async function hostProcessesOf(markers: string[]): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes('runsc')) continue;
    const args = cmdline.split('\0');
    if (markers.some((marker) => args.some((arg) => arg === marker || arg.endsWith(`=${marker}`)))) pids.push(Number(entry));
  }
  return pids;
}

/**
 * Host pids of runsc command-line invocations (`exec`, `checkpoint`, `run`, ...) on the state root
 * `runscRoot` whose parent is gone: a control plane that crashed leaves them running, and nobody will
 * ever read their result, with their subcommand. The sandbox and gofer processes (`runsc-sandbox`, `runsc-gofer`) are not
 * invocations: they are the sandboxes themselves.
 */
export async function orphanedInvocations(runscRoot: string): Promise<{ pid: number; subcommand: string }[]> {
  const pids: { pid: number; subcommand: string }[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const args = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const program = args[0] ?? '';
    if (!(program === 'runsc' || program.endsWith('/runsc')) || !args.includes(`--root=${runscRoot}`)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (parent === 1) pids.push({ pid: Number(entry), subcommand: args.slice(1).find((arg) => arg !== '' && !arg.startsWith('-')) ?? '' });
  }
  return pids;
}

/** Host pids of `runsc exec` processes (commands in flight) into a container. */
export async function execProcessesOf(containerId: string): Promise<number[]> {
  const pids: number[] = [];
  for (const pid of await hostProcessesOf([containerId])) {
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (args.includes('exec')) pids.push(pid);
  }
  return pids;
}

/** True when a host process exists and is not a zombie. */
export async function isProcessAlive(pid: number): Promise<boolean> {
  if (pid <= 0) return false;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return stat !== '' && state !== 'Z' && state !== 'X';
}

// A bind mount needs its mount point, and the read-only rootfs view cannot get new ones: only files the image has.
async function existingFiles(spec: DirectorySpec): Promise<{ hostPath: string; sandboxPath: string }[]> {
  const files: { hostPath: string; sandboxPath: string }[] = [];
  for (const file of spec.network?.files ?? []) {
    const inImage = await lstat(join(spec.rootfsDir, file.sandboxPath)).catch(() => undefined);
    if (inImage?.isFile()) files.push(file);
  }
  return files;
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
