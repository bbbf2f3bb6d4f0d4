/**
 * The contract's filesystem rules as the sandbox's own mounts: which paths a
 * sandbox sees read-only, which are masked and which stay writable. Pure: it
 * only decides; `filesystem-mount-sources.ts` turns the plan into OCI mounts
 * on the host.
 *
 * Why mounts in the OCI spec: runsc creates them before the workload starts,
 * so no process inside ever saw the paths writable, and the seccomp filter
 * the agent installs at boot (agent/src/seccomp.c) keeps any process from remounting, unmounting or
 * mounting over them (measured on runsc 20240729: without it, a process with a
 * user and mount namespace of its own remounts a read-only bind read-write).
 *
 * The rules:
 * - `denyRead` P: an empty, read-only, mode-0 mount hides P (and everything
 *   under it, so rules under P need no mount of their own);
 * - `denyWrite` / `readOnly` P: P is mounted read-only;
 * - `allowWrite` present: the root is read-only, and each allowed prefix is
 *   mounted read-write (unless a read-only rule covers it: those win);
 * - a mount is made only where the access changes, and every directory
 *   between /workspace and a mount under it is itself a mount (bound to
 *   itself), so that renaming a parent cannot move the protected path away
 *   (the kernel answers EBUSY for a mount point); outside /workspace the
 *   agent pins the parents the same way at boot (`agentPinsOf`, agent/src/pins.c),
 *   since a bind from the host there would bypass the root's overlay;
 * - /etc/machine-id stays writable when a rule would make it read-only, for
 *   the identity a fork branch gets (an exception, documented).
 */
import type { FilesystemRules } from '../../core/session-contract.js';

/** Where a planned mount takes its content from. */
export type MountRegion = 'workspace' | 'tmp' | 'image' | 'system';

/** One mount of the plan, outermost first. */
export interface PlannedMount {
  /** absolute path inside the sandbox */
  destination: string;
  /** `mask`: hidden behind an empty read-only mount; `read-only`/`read-write`: the path's own content */
  access: 'mask' | 'read-only' | 'read-write';
  /** the mount that holds it: the session's /workspace, the /tmp tmpfs, the image's root; `system` (/proc, /dev, /sys, Airlock's /.airlock) is never planned */
  region: MountRegion;
  /** true for a parent bound to itself only to keep it from being renamed */
  pin: boolean;
  /**
   * true for /etc/machine-id kept writable under a read-only rule: a fork branch gets its own id
   * there (sandbox-identity.ts). It lives on the session disk, so a resumed machine keeps its id.
   */
  identity?: true;
}

/** The mounts that enforce one contract's filesystem rules. */
export interface FilesystemMountPlan {
  /** the image root (and its overlay) is read-only: `allowWrite` is present and does not cover `/` */
  rootReadonly: boolean;
  /** /workspace itself is read-only */
  workspaceReadonly: boolean;
  /** /tmp (a tmpfs) is read-only */
  tmpReadonly: boolean;
  mounts: PlannedMount[];
}

/** The file a fork branch's identity is written to, which rules must leave writable. */
export const MACHINE_ID_PATH = '/etc/machine-id';

/** Mount point of the session workspace (the same as oci-spec's WORKSPACE_PATH, kept here to stay free of imports). */
const WORKSPACE = '/workspace';
const TMP = '/tmp';
/** The machine's own filesystems: kernel interfaces, the agent and its host socket, outside the rules. */
const SYSTEM_PATHS = ['/proc', '/dev', '/sys', '/.airlock'];

/** True when some list would change a sandbox's mounts (an empty allowWrite does: it allows writes nowhere). */
export function hasFilesystemRules(rules: FilesystemRules | undefined): rules is FilesystemRules {
  return rules !== undefined && (rules.denyRead.length > 0 || rules.denyWrite.length > 0 || rules.readOnly.length > 0 || rules.allowWrite !== undefined);
}

/** Decides the mounts of `rules` (lists already normalized by the contract parser). */
export function planFilesystemMounts(rules: FilesystemRules): FilesystemMountPlan {
  const masked = (path: string): boolean => rules.denyRead.some((prefix) => within(path, prefix));
  const writable = (path: string): boolean =>
    !rules.denyWrite.some((prefix) => within(path, prefix)) &&
    !rules.readOnly.some((prefix) => within(path, prefix)) &&
    (rules.allowWrite === undefined || rules.allowWrite.some((prefix) => within(path, prefix)));
  const plan: FilesystemMountPlan = { rootReadonly: !writable('/'), workspaceReadonly: !writable(WORKSPACE), tmpReadonly: !writable(TMP), mounts: [] };
  const boundaries = new Set([...rules.denyRead, ...rules.denyWrite, ...rules.readOnly, ...(rules.allowWrite ?? [])]);
  // Outermost first: a mount's parent mount must exist before it, and a mask ends everything under it.
  const ordered = [...boundaries]
    .filter((path) => path !== '/' && regionOf(path) !== 'system' && ((path !== WORKSPACE && path !== TMP) || masked(path)))
    .sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
  const made: PlannedMount[] = [];
  for (const destination of ordered) {
    if (rules.denyRead.some((prefix) => prefix !== destination && within(destination, prefix))) continue;
    const region = regionOf(destination);
    const access = masked(destination) ? 'mask' : writable(destination) ? 'read-write' : 'read-only';
    if (access !== 'mask' && access === enclosingAccess(destination, made, plan)) continue;
    made.push({ destination, access, region, pin: false });
  }
  plan.mounts = withPins(made, plan);
  if (accessAt(plan, MACHINE_ID_PATH) === 'read-only') {
    plan.mounts.push({ destination: MACHINE_ID_PATH, access: 'read-write', region: 'image', pin: false, identity: true });
  }
  return plan;
}

/** The access a sandbox has to `path` under a plan: that of the innermost mount holding it. */
export function accessAt(plan: FilesystemMountPlan, path: string): PlannedMount['access'] {
  return enclosingAccess(path, plan.mounts, plan, true);
}

/** Where `path` lives: under /workspace, under /tmp, in the machine's own filesystems, or in the image. */
export function regionOf(path: string): MountRegion {
  if (SYSTEM_PATHS.some((prefix) => within(path, prefix))) return 'system';
  if (within(path, WORKSPACE)) return 'workspace';
  if (within(path, TMP)) return 'tmp';
  return 'image';
}

/** The access of the nearest mount that holds `path`, among those planned so far and the base ones. */
function enclosingAccess(path: string, made: readonly PlannedMount[], plan: FilesystemMountPlan, inclusive = false): PlannedMount['access'] {
  const parent = [...made].reverse().find((mount) => (inclusive || mount.destination !== path) && within(path, mount.destination));
  if (parent) return parent.access;
  if (within(path, WORKSPACE)) return plan.workspaceReadonly ? 'read-only' : 'read-write';
  if (within(path, TMP)) return plan.tmpReadonly ? 'read-only' : 'read-write';
  return plan.rootReadonly ? 'read-only' : 'read-write';
}

/**
 * Adds a self-bind for every writable parent directory between /workspace and
 * a mount under it: a mount point cannot be renamed or removed, so
 * `mv /workspace/a /workspace/b` cannot carry /workspace/a/keep out of its rule.
 */
function withPins(made: readonly PlannedMount[], plan: FilesystemMountPlan): PlannedMount[] {
  const destinations = new Set(made.map((mount) => mount.destination));
  const pins = new Map<string, PlannedMount>();
  for (const mount of made) {
    if (mount.region !== 'workspace') continue;
    const parts = mount.destination.slice(WORKSPACE.length + 1).split('/');
    for (let index = 1; index < parts.length; index++) {
      const parent = `${WORKSPACE}/${parts.slice(0, index).join('/')}`;
      if (destinations.has(parent) || pins.has(parent)) continue;
      const access = enclosingAccess(parent, made, plan);
      // Inside a read-only mount nothing can be renamed anyway; inside a mask nothing is reachable.
      if (access !== 'read-write') continue;
      pins.set(parent, { destination: parent, access, region: 'workspace', pin: true });
    }
  }
  return [...made, ...pins.values()].sort((a, b) => depth(a.destination) - depth(b.destination) || a.destination.localeCompare(b.destination));
}

/**
 * The directories the agent binds onto itself at boot (agent/src/pins.c): every parent of a mount
 * outside /workspace, up to but excluding `/`, that is not a mount already; outermost first. Under
 * /workspace the plan's own pins do it. `destinations` are all the spec's mounts of the rules.
 */
export function agentPinsOf(destinations: readonly string[]): string[] {
  const mounted = new Set([WORKSPACE, ...SYSTEM_PATHS, ...destinations]);
  const pins = new Set<string>();
  for (const destination of destinations) {
    if (within(destination, WORKSPACE) || regionOf(destination) === 'system') continue;
    const parts = destination.split('/').filter((part) => part !== '');
    for (let index = 1; index < parts.length; index++) {
      const parent = `/${parts.slice(0, index).join('/')}`;
      if (!mounted.has(parent)) pins.add(parent);
    }
  }
  return [...pins].sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
}

function within(path: string, prefix: string): boolean {
  return prefix === '/' || path === prefix || path.startsWith(`${prefix}/`);
}

function depth(path: string): number {
  return path === '/' ? 0 : path.split('/').length - 1;
}
