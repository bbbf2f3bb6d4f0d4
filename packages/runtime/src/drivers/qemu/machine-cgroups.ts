/**
 * Host cgroups (v1) of one QEMU process, at the same `/airlock/<sandboxId>`
 * path as gVisor sandboxes (usage, OOM and removal are shared with that
 * driver's cgroups.ts). The guest's own memory limit is its RAM size; the
 * host limit adds QEMU's own needs (device emulation, the TCG translation
 * cache), so a runaway QEMU cannot take the host with it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { SandboxResources } from '../../core/sandbox-driver.js';
import { CGROUP_PARENT, CGROUP_ROOT, CPU_PERIOD_US, cpuQuotaUs, hasCgroupV1 } from '../gvisor/cgroups.js';
import { TCG_CACHE_MB } from './qemu-command-line.js';

/** Host memory QEMU may use beyond the guest's RAM: emulation, the translation cache, I/O buffers. */
export const QEMU_OVERHEAD_MB = 192 + TCG_CACHE_MB;

const HIERARCHIES = ['memory', 'cpu', 'cpuacct', 'pids'] as const;

/** Makes the VM's cgroups with their limits; returns the `cgroup.procs` files QEMU joins. */
export async function createMachineCgroups(sandboxId: string, resources: Pick<SandboxResources, 'cpus' | 'memoryMb'>): Promise<string[]> {
  if (!(await hasCgroupV1())) {
    throw new AirlockError('DRIVER_UNAVAILABLE', 'the microvm driver needs the cgroup v1 memory, cpu and cpuacct hierarchies under /sys/fs/cgroup');
  }
  const procs: string[] = [];
  for (const hierarchy of HIERARCHIES) {
    const dir = join(CGROUP_ROOT, hierarchy, CGROUP_PARENT, sandboxId);
    await mkdir(dir, { recursive: true });
    procs.push(join(dir, 'cgroup.procs'));
  }
  const memory = join(CGROUP_ROOT, 'memory', CGROUP_PARENT, sandboxId);
  await writeFile(join(memory, 'memory.limit_in_bytes'), String((resources.memoryMb + QEMU_OVERHEAD_MB) * 1024 * 1024));
  const cpu = join(CGROUP_ROOT, 'cpu', CGROUP_PARENT, sandboxId);
  await writeFile(join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
  await writeFile(join(cpu, 'cpu.cfs_quota_us'), String(cpuQuotaUs(resources.cpus)));
  // A backstop on QEMU's threads (it needs a few dozen); the guest's process limit is its own cgroup inside.
  await writeFile(join(CGROUP_ROOT, 'pids', CGROUP_PARENT, sandboxId, 'pids.max'), '512');
  return procs;
}
