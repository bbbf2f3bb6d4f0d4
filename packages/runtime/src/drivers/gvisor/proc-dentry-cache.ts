/**
 * Bounds what gVisor's procfs keeps of processes that have exited.
 *
 * Measured on runsc 20240729 (bench/exec-memory-growth.bench.ts): a lookup
 * of /proc/<pid> (or /proc/self, which every static glibc binary, the
 * toolbox busybox included, reads at start: `readlink /proc/self/exe`)
 * builds that task's whole procfs directory, ~80 KiB of sentry objects, and
 * procfs keeps it in its dentry cache after the task exits, up to 1000
 * entries. An exec started ~8 busybox processes then (4–5 since, see
 * in-sandbox-scripts.ts), so the sentry grew by ~0.6 MB of kernel state
 * (~0.8 MB of RSS) per exec until the cache was full at ~75 MB; every
 * checkpoint saves that state and every restore decodes it (restore went
 * from ~0.9 s to 5.3 s). runsc ignores OCI mount options on /proc, so the
 * driver mounts a second procfs with a small `dentry_cache_limit` over
 * /proc, from a one-off exec that alone holds CAP_SYS_ADMIN. Everything
 * else about /proc stays the same; the extra mount shows in /proc/mounts.
 * The mount is kernel state, so checkpoints keep it: an image taken of a
 * bounded sandbox carries a marker file, and its restores skip the exec
 * (~70 ms idle); an image without one (taken before this existed) gets the
 * idempotent script after restore.
 */
import { AirlockError } from '../../core/errors.js';
import { TOOLBOX_PATH } from './in-sandbox-scripts.js';
import type { Runsc } from './runsc.js';
import { BOUNDED_PROC } from './sandbox-markers.js';

/** Dentries procfs may cache: at most ~5 MB of exited tasks' directories. */
export const PROC_DENTRY_CACHE_LIMIT = 64;

/**
 * Mounts the bounded procfs over /proc unless the top /proc mount (the last
 * one listed) already is one. `$1` is the mount table, /proc/mounts.
 */
export const PROC_MOUNT_SCRIPT = `B=${TOOLBOX_PATH}
o=
while read -r _ d t opts _; do [ "$d" = /proc ] && [ "$t" = proc ] && o=$opts; done <"$1"
case ",$o," in *,dentry_cache_limit=${PROC_DENTRY_CACHE_LIMIT},*) exit 0 ;; esac
exec $B mount -t proc -o dentry_cache_limit=${PROC_DENTRY_CACHE_LIMIT} proc /proc
`;

/**
 * Gives container `containerId` the bounded /proc, unless `imageDir` (the
 * image it was restored from) says it has it, and records that in `stateDir`.
 */
export async function boundProcDentryCache(runsc: Runsc, containerId: string, stateDir: string, imageDir?: string): Promise<void> {
  if (!(imageDir !== undefined && (await BOUNDED_PROC.isIn(imageDir)))) await mountBoundedProc(runsc, containerId);
  await BOUNDED_PROC.put(stateDir);
}

async function mountBoundedProc(runsc: Runsc, containerId: string): Promise<void> {
  const args = ['exec', '--cap', 'CAP_SYS_ADMIN', containerId, TOOLBOX_PATH, 'sh', '-c', PROC_MOUNT_SCRIPT, 'airlock-proc', '/proc/mounts'];
  const result = await runsc.run(args, { timeoutMs: 30_000 });
  if (result.code !== 0) {
    throw new AirlockError('DRIVER_FAILED', `mounting the bounded /proc in sandbox ${containerId} failed: ${result.stderr.trim().slice(-500) || `exit ${result.code}`}`, {
      details: { exitCode: result.code },
    });
  }
}
