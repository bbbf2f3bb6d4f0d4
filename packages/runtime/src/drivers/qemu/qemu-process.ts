/**
 * QEMU processes on the host: started detached (a VM outlives a restart of
 * the control plane, which finds it again by its sockets), already inside
 * its cgroups (so every page QEMU touches is charged to them from the
 * start), optionally inside the sandbox's network namespace (where its tap
 * device is). Found again by a marker in their command line.
 */
import { spawn } from 'node:child_process';
import { open, readdir, readFile } from 'node:fs/promises';

/** How to start one QEMU. */
export interface QemuLaunch {
  binary: string;
  args: string[];
  /** QEMU's own stdout and stderr go here (appended) */
  logPath: string;
  /** `cgroup.procs` files the process joins before it execs QEMU */
  cgroupProcs: string[];
  /** run in this network namespace (its tap device lives there) */
  netnsPath?: string;
}

/** Starts QEMU detached; resolves with its pid (the wrapper execs QEMU, so the pid stays). */
export async function launchQemu(launch: QemuLaunch): Promise<number> {
  const log = await open(launch.logPath, 'a', 0o600);
  try {
    // The shell joins the cgroups, then replaces itself with QEMU (through nsenter when networked).
    const script = 'for procs in $AIRLOCK_CGROUP_PROCS; do echo $$ > "$procs" || exit 97; done; exec "$@"';
    const command = launch.netnsPath ? ['nsenter', `--net=${launch.netnsPath}`, launch.binary, ...launch.args] : [launch.binary, ...launch.args];
    const child = spawn('/bin/sh', ['-c', script, 'airlock-qemu', ...command], {
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
      env: { PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin', AIRLOCK_CGROUP_PROCS: launch.cgroupProcs.join(' ') },
    });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => resolve(child.pid ?? -1));
    });
    child.unref();
    return pid;
  } finally {
    await log.close();
  }
}

/** Pids of live processes whose command line contains `marker`. */
export async function processesWith(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(marker) && (await isAlive(Number(entry)))) pids.push(Number(entry));
  }
  return pids;
}

/** The NUL-separated command line of a process ('' when it is gone). */
export async function commandLineOf(pid: number): Promise<string[]> {
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline ? cmdline.split('\0').filter(Boolean) : [];
}

/** True when the process exists and is not a zombie. */
export async function isAlive(pid: number): Promise<boolean> {
  if (!(pid > 0)) return false;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return stat !== '' && state !== 'Z' && state !== 'X';
}

/** SIGKILLs the processes and waits until they are gone (bounded). */
export async function killAndWait(pids: readonly number[]): Promise<void> {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (let waited = 0; waited < 100; waited++) {
    const alive = await Promise.all(pids.map(isAlive));
    if (!alive.some(Boolean)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
