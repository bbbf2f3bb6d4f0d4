/**
 * Turns a filesystem mount plan (filesystem-mounts.ts) into OCI mounts with
 * host sources, and makes what they need on the host: a path of a rule that
 * does not exist yet under /workspace becomes an empty directory on the
 * session disk (so the rule has a mount point and holds from the start),
 * and a writable prefix outside /workspace is a directory on the session
 * disk under `writable/`.
 *
 * Host paths are checked component by component: a source that crosses a
 * symlink is refused, because runsc resolves bind sources on the host, where
 * a link the agent planted (`/workspace/a -> /`) would point at the host's
 * own files. Every component of a rule's path under /workspace is itself a
 * mount from the first start (see the pins of the plan), so the agent cannot
 * replace one later; the check catches a disk prepared otherwise.
 */
import { chmod, copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FilesystemRules } from '../../core/session-contract.js';
import { agentPinsOf, hasFilesystemRules, planFilesystemMounts, type FilesystemMountPlan, type PlannedMount } from './filesystem-mounts.js';
import type { RuleMounts } from './oci-spec.js';
import { createdHostPath, safeHostPath, type HostPath } from './safe-host-path.js';
import { prepareImageMountPoints } from './image-mount-points.js';
import { RULE_MOUNTS } from './sandbox-markers.js';

/** One entry of an OCI spec's `mounts`. */
export interface OciMount {
  destination: string;
  type: string;
  source: string;
  options?: string[];
}

/** Host locations a sandbox's rule mounts come from. */
export interface MountSourceLayout {
  /** the session disk's workspace dir, bound at /workspace */
  workspaceHostDir: string;
  /** the read-only view of the image the sandbox's root is made of */
  rootfsView: string;
  /** the session disk (writable prefixes outside /workspace live under `writable/`) */
  diskDir: string;
  /** the sandbox's state dir (holds the empty file that masks denied files) */
  stateDir: string;
}

/** The OCI mounts of a plan, and the rules that no mount can carry on this image (with why). */
export interface ResolvedRuleMounts {
  /** /tmp as its own tmpfs, when the plan makes it read-only or puts mounts under it; else absent */
  tmp?: OciMount;
  mounts: OciMount[];
  skipped: { destination: string; reason: string }[];
}

/** A sandbox's rule plan, decided before its root view is mounted (the view may need a layer of mount points). */
export interface PreparedRules {
  plan: FilesystemMountPlan;
  /** the view's extra lower layer with the mount points the image lacks (image-mount-points.ts) */
  mountPointsDir?: string;
}

/**
 * Plans `rules` for one sandbox and makes the mount points its image lacks; puts the marker saying the
 * sandbox's mounts follow the rules (its checkpoints carry it, so a restore knows to make them again).
 * Undefined when there are no rules.
 */
export async function prepareRules(rules: FilesystemRules | undefined, rootfsDir: string, stateDir: string): Promise<PreparedRules | undefined> {
  await mkdir(stateDir, { recursive: true });
  await RULE_MOUNTS.put(stateDir);
  if (!hasFilesystemRules(rules)) return undefined;
  const plan = planFilesystemMounts(rules);
  const mountPointsDir = await prepareImageMountPoints(plan, rootfsDir, stateDir);
  return { plan, ...(mountPointsDir === undefined ? {} : { mountPointsDir }) };
}

/**
 * The spec's part of a prepared plan, once the root view is mounted. What could not be mounted is
 * recorded in `<stateDir>/rule-mounts.json` beside the plan.
 */
export async function ruleMountsOf(prepared: PreparedRules, layout: MountSourceLayout): Promise<RuleMounts> {
  const { plan } = prepared;
  const resolved = await resolveRuleMounts(plan, layout);
  await writeFile(join(layout.stateDir, 'rule-mounts.json'), `${JSON.stringify({ plan, skipped: resolved.skipped }, null, 2)}\n`);
  return {
    rootReadonly: plan.rootReadonly,
    workspaceReadonly: plan.workspaceReadonly,
    mounts: resolved.mounts,
    pins: agentPinsOf([...(resolved.tmp ? [resolved.tmp.destination] : []), ...resolved.mounts.map((mount) => mount.destination)]),
    ...(resolved.tmp ? { tmp: resolved.tmp } : {}),
  };
}

/** Resolves every planned mount to a host source, creating missing mount points on the session disk. */
export async function resolveRuleMounts(plan: FilesystemMountPlan, layout: MountSourceLayout): Promise<ResolvedRuleMounts> {
  const resolved: ResolvedRuleMounts = { mounts: [], skipped: [] };
  if (plan.tmpReadonly || plan.mounts.some((mount) => mount.region === 'tmp')) {
    resolved.tmp = { destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777', plan.tmpReadonly ? 'ro' : 'rw'] };
  }
  for (const mount of plan.mounts) {
    const outcome = await resolveOne(mount, layout);
    if (typeof outcome === 'string') resolved.skipped.push({ destination: mount.destination, reason: outcome });
    else resolved.mounts.push(outcome);
  }
  return resolved;
}

/** The OCI mount of one planned mount, or the reason it cannot be made. */
async function resolveOne(mount: PlannedMount, layout: MountSourceLayout): Promise<OciMount | string> {
  const access = mount.access === 'read-write' ? 'rw' : 'ro';
  if (mount.region === 'tmp') {
    // /tmp is a fresh tmpfs of the sandbox: a rule under it is an empty tmpfs of its own.
    return {
      destination: mount.destination,
      type: 'tmpfs',
      source: 'tmpfs',
      options: ['nosuid', 'nodev', access, ...(mount.access === 'mask' ? ['mode=000', 'size=4k'] : ['mode=1777'])],
    };
  }
  if (mount.region === 'workspace') {
    const host = await createdHostPath(layout.workspaceHostDir, mount.destination.slice('/workspace/'.length));
    return hostMount(mount, host, layout);
  }
  if (mount.region === 'image' && mount.identity) return identityMount(mount, layout);
  if (mount.region === 'image') {
    const relative = mount.destination.slice(1);
    let inImage: HostPath | undefined;
    try {
      inImage = await safeHostPath(layout.rootfsView, relative, { create: false });
    } catch {
      return `${mount.destination} crosses a symbolic link or a file in the image; the files API applies the rule to the path it resolves to`;
    }
    if (inImage === undefined) return `${mount.destination} is not in the image, so it has no mount point; the files API still applies the rule`;
    if (mount.access !== 'read-write') return hostMount(mount, inImage, layout);
    if (inImage.kind !== 'directory') return `${mount.destination} is a file in the image; only directories can be made writable under a read-only root`;
    // Writable under a read-only root: a directory of the session disk, empty at first (the image's content there is hidden).
    return bind(mount.destination, (await createdHostPath(layout.diskDir, `writable/${relative}`)).path, 'rw');
  }
  return `${mount.destination} belongs to the machine (/proc, /dev, /sys, /.airlock), not to the rules`;
}

/** /etc/machine-id, writable, from the session disk (copied from the image's the first time), so a resume keeps the id. */
async function identityMount(mount: PlannedMount, layout: MountSourceLayout): Promise<OciMount | string> {
  const inView = await safeHostPath(layout.rootfsView, mount.destination.slice(1), { create: false }).catch(() => undefined);
  if (inView?.kind !== 'file') return `${mount.destination} is not a plain file of the image; a fork branch's identity cannot be written there`;
  const dir = await createdHostPath(layout.diskDir, 'identity');
  const file = await safeHostPath(dir.path, 'machine-id', { create: false });
  if (file === undefined) await copyFile(inView.path, join(dir.path, 'machine-id'));
  else if (file.kind !== 'file') return `${file.path} on the session disk is not a file`;
  return bind(mount.destination, join(dir.path, 'machine-id'), 'rw');
}

/** A bind of `host` (or a mask over it) for a planned mount. */
async function hostMount(mount: PlannedMount, host: HostPath, layout: MountSourceLayout): Promise<OciMount> {
  if (mount.access !== 'mask') return bind(mount.destination, host.path, mount.access === 'read-write' ? 'rw' : 'ro');
  if (host.kind === 'directory')
    return { destination: mount.destination, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'noexec', 'ro', 'mode=000', 'size=4k'] };
  return bind(mount.destination, await maskFile(layout.stateDir), 'ro');
}

function bind(destination: string, source: string, access: 'ro' | 'rw'): OciMount {
  return { destination, type: 'bind', source, options: ['rbind', access] };
}

/** An empty, unreadable host file to bind over a denied file. */
async function maskFile(stateDir: string): Promise<string> {
  const path = join(stateDir, 'airlock-masked-file');
  await writeFile(path, '', { flag: 'a' });
  await chmod(path, 0o000);
  return path;
}
