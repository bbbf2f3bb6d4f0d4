/**
 * Cgroup v1 handling for gVisor sandboxes. Each sandbox gets the explicit
 * path `/airlock/<sandboxId>` (`.linux.cgroupsPath`), because without one
 * runsc creates `/<container-id>` at the root of every hierarchy and leaks it
 * when it is killed. Destroy removes the directory from every hierarchy.
 */
import { readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { SandboxResources, SandboxUsage } from '../../core/sandbox-driver.js';

/** Mount point of the v1 hierarchies. */
export const CGROUP_ROOT = '/sys/fs/cgroup';
/** The parent of every sandbox's cgroup in each hierarchy. */
export const CGROUP_PARENT = 'airlock';
/** CFS period used for the CPU quota (the kernel default). */
export const CPU_PERIOD_US = 100_000;

/** The `.linux.cgroupsPath` of a sandbox. */
export function cgroupPathOf(sandboxId: string): string {
  return `/${CGROUP_PARENT}/${sandboxId}`;
}

/** CPU quota in microseconds per period for a number of CPUs. */
export function cpuQuotaUs(cpus: number): number {
  return Math.max(1000, Math.round(cpus * CPU_PERIOD_US));
}

/**
 * The pids cap: a host backstop only. pids counts the sentry's and its stubs'
 * host threads, and a low cap crashes the whole sandbox (pitfall 8), so it
 * sits far above what RLIMIT_NPROC lets the guest create.
 */
export function pidsBackstop(maxProcesses: number): number {
  return Math.max(8192, maxProcesses * 32);
}

/** True when the host has the v1 memory and cpu hierarchies that this driver writes to. */
export async function hasCgroupV1(): Promise<boolean> {
  const present = await Promise.all(['memory', 'cpu', 'cpuacct'].map((name) => isDirectory(join(CGROUP_ROOT, name))));
  return present.every(Boolean);
}

/** Changes memory and CPU limits of a live sandbox in place (pitfall 8c: memory raises work live). */
export async function writeLimits(sandboxId: string, resources: Pick<SandboxResources, 'cpus' | 'memoryMb'>): Promise<void> {
  const memory = join(CGROUP_ROOT, 'memory', CGROUP_PARENT, sandboxId);
  const cpu = join(CGROUP_ROOT, 'cpu', CGROUP_PARENT, sandboxId);
  if (!(await isDirectory(memory)) || !(await isDirectory(cpu))) {
    throw new AirlockError('INVALID_STATE', `sandbox ${sandboxId} has no cgroup; it is not running`);
  }
  try {
    await writeFile(join(memory, 'memory.limit_in_bytes'), String(resources.memoryMb * 1024 * 1024));
  } catch (error) {
    // The kernel refuses a limit below what the sandbox already uses (EBUSY).
    throw new AirlockError(
      'INVALID_STATE',
      `cannot set memory of ${sandboxId} to ${resources.memoryMb} MB: it uses more than that now; free memory first or choose a higher limit`,
      { cause: error },
    );
  }
  await writeFile(join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
  await writeFile(join(cpu, 'cpu.cfs_quota_us'), String(cpuQuotaUs(resources.cpus)));
}

/** CPU time and memory of a sandbox from its cgroups. */
export async function readUsage(sandboxId: string): Promise<SandboxUsage> {
  const read = async (hierarchy: string, file: string): Promise<number> => {
    try {
      return Number((await readFile(join(CGROUP_ROOT, hierarchy, CGROUP_PARENT, sandboxId, file), 'utf8')).trim());
    } catch (error) {
      throw new AirlockError('INVALID_STATE', `sandbox ${sandboxId} has no cgroup; it is not running`, { cause: error });
    }
  };
  const [cpuNs, memory, peak] = await Promise.all([
    read('cpuacct', 'cpuacct.usage'),
    read('memory', 'memory.usage_in_bytes'),
    read('memory', 'memory.max_usage_in_bytes'),
  ]);
  return { cpuSeconds: cpuNs / 1e9, memoryBytes: memory, peakMemoryBytes: peak };
}

/**
 * Freezes every process of the sandbox (sentry, gofer, stubs) with the v1 freezer: the kernel stops them
 * in place, which is what `runsc pause` achieves through the sentry, without spawning runsc (~25 ms,
 * measured). Resolves once the kernel says FROZEN; false when the sandbox has no freezer cgroup.
 */
export async function freeze(sandboxId: string): Promise<boolean> {
  const state = join(CGROUP_ROOT, 'freezer', CGROUP_PARENT, sandboxId, 'freezer.state');
  if (
    !(await writeFile(state, 'FROZEN').then(
      () => true,
      () => false,
    ))
  )
    return false;
  // FREEZING until every task stopped: usually at once, longer while a task is in an uninterruptible wait.
  for (let waited = 0; waited < 200; waited++) {
    if ((await readFile(state, 'utf8')).trim() === 'FROZEN') return true;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await writeFile(state, 'THAWED').catch(() => undefined);
  throw new AirlockError('DRIVER_FAILED', `sandbox ${sandboxId} did not freeze within a second; it was left running`);
}

/** Thaws what `freeze` froze; true when it was frozen (or freezing). A missing cgroup is not frozen. */
export async function thaw(sandboxId: string): Promise<boolean> {
  const state = join(CGROUP_ROOT, 'freezer', CGROUP_PARENT, sandboxId, 'freezer.state');
  const before = await readFile(state, 'utf8').then(
    (text) => text.trim(),
    () => 'THAWED',
  );
  if (before === 'THAWED') return false;
  await writeFile(state, 'THAWED');
  return true;
}

/** Whether the sandbox's processes are frozen (or being frozen) by `freeze`. */
export async function isFrozen(sandboxId: string): Promise<boolean> {
  const state = await readFile(join(CGROUP_ROOT, 'freezer', CGROUP_PARENT, sandboxId, 'freezer.state'), 'utf8').then(
    (text) => text.trim(),
    () => 'THAWED',
  );
  return state !== 'THAWED';
}

/**
 * Whether the kernel's OOM killer acted in the sandbox's memory cgroup
 * (`oom_kill` of memory.oom_control); undefined when the cgroup is gone or
 * the kernel does not count it.
 */
export async function wasOomKilled(sandboxId: string): Promise<boolean | undefined> {
  try {
    const control = await readFile(join(CGROUP_ROOT, 'memory', CGROUP_PARENT, sandboxId, 'memory.oom_control'), 'utf8');
    const kills = /^oom_kill (\d+)$/m.exec(control)?.[1];
    return kills === undefined ? undefined : Number(kills) > 0;
  } catch {
    return undefined;
  }
}

/** Cgroup directories of a sandbox that still exist, in any hierarchy (v1 and the unified one). */
export async function leftoverCgroups(sandboxId: string): Promise<string[]> {
  const hierarchies = await readdir(CGROUP_ROOT).catch(() => [] as string[]);
  const found: string[] = [];
  for (const hierarchy of hierarchies) {
    const dir = join(CGROUP_ROOT, hierarchy, CGROUP_PARENT, sandboxId);
    if (await isDirectory(dir)) found.push(dir);
  }
  return found;
}

/**
 * Removes the sandbox's cgroup from every hierarchy. runsc does this on a
 * clean delete; this covers a killed runsc. Retries while the last tasks exit.
 */
export async function removeCgroups(sandboxId: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const left = await leftoverCgroups(sandboxId);
    if (left.length === 0) return;
    await Promise.all(left.map((dir) => removeTree(dir).catch(() => undefined)));
    if ((await leftoverCgroups(sandboxId)).length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const left = await leftoverCgroups(sandboxId);
  if (left.length > 0) {
    throw new AirlockError('DRIVER_FAILED', `cgroup directories of ${sandboxId} could not be removed (tasks still inside?): ${left.join(', ')}`);
  }
}

/** Cgroup directories can only be removed bottom-up with rmdir (their files are virtual). */
async function removeTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await removeTree(join(dir, entry.name));
  await rmdir(dir);
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
