/**
 * The floor under a fork: one `runsc checkpoint` of a sandbox holding memory,
 * restored N times by hand (`runsc restore --detach`, then `runsc exec true`),
 * each from its own bundle, a few at a time like Airlock's fork. Shared by
 * bench/fork.bench.ts and the issue 11 harness.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The cgroup parent of the floor's restored sandboxes, in every hierarchy. */
const FLOOR_CGROUP = 'airlock-fork-floor';

/** RSS and PSS (bytes) of the host processes whose command line mentions `marker`. */
export function hostMemory(marker: string): { rss: number; pss: number } {
  let rss = 0;
  let pss = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) continue;
      rss += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
      pss += Number(/Pss:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      // the process went away
    }
  }
  return { rss, pss };
}

/** The floor: runsc driven by hand, one checkpoint restored N times, each from its own bundle. */
export class FloorFork {
  private readonly root: string;
  private readonly spec: Record<string, unknown>;
  private live: string[] = [];

  /** `holdScript` is the Python program the template runs as its first process; it writes /tmp/held once it holds its memory. */
  constructor(private readonly work: string, rootfs: string, holdScript: string, private readonly parallelism = 4) {
    this.root = join(work, 'floor-root');
    mkdirSync(this.root, { recursive: true });
    this.spec = {
      ociVersion: '1.0.0',
      // The holder is the container's first process: one started by `runsc exec` keeps host FDs and spoils the restore.
      process: { user: { uid: 0, gid: 0 }, args: ['/usr/bin/python3', '-c', holdScript], env: ['PATH=/usr/local/bin:/usr/bin:/bin'], cwd: '/' },
      root: { path: rootfs, readonly: false },
      hostname: 'floor',
      mounts: [{ destination: '/proc', type: 'proc', source: 'proc' }, { destination: '/tmp', type: 'tmpfs', source: 'tmpfs' }],
      linux: { namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }] },
    };
  }

  private bundle(id: string): string {
    const dir = join(this.work, `floor-bundle-${id}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...this.spec, linux: { ...(this.spec['linux'] as object), cgroupsPath: `/${FLOOR_CGROUP}/${id}` } }));
    return dir;
  }

  private runsc(args: string[], cwd?: string): string {
    return execFileSync('runsc', [`--root=${this.root}`, '--network=none', '--overlay2=root:memory', ...args], { ...(cwd ? { cwd } : {}), maxBuffer: 1 << 26 }).toString();
  }

  /** Starts the template, lets it hold the memory, checkpoints it into `imageDir`. */
  template(imageDir: string): void {
    const id = `floor-template-${process.pid}`;
    execFileSync('runsc', [`--root=${this.root}`, '--network=none', '--overlay2=root:memory', 'run', '--detach', id], { cwd: this.bundle(id), stdio: 'ignore' });
    this.runsc(['exec', id, 'sh', '-c', 'while [ ! -f /tmp/held ]; do sleep 0.1; done']);
    mkdirSync(imageDir, { recursive: true });
    this.runsc(['checkpoint', '--compression=none', `--image-path=${imageDir}`, id]);
    this.destroy(id);
  }

  /**
   * `runsc restore --detach` N times, then `runsc exec true` in each; returns the container ids.
   * Restores run `parallelism` at a time, like Airlock's fork (16 at once overloads this 2-core host kind).
   */
  async restore(imageDir: string, n: number): Promise<string[]> {
    // Zero-padded: runsc matches container ids by prefix, so `…-1` would also name `…-10`.
    const ids = Array.from({ length: n }, (_, i) => `floor-fork-${process.pid}-${n}-${String(i).padStart(3, '0')}`);
    const run = (args: string[], cwd?: string) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn('runsc', [`--root=${this.root}`, '--network=none', '--overlay2=root:memory', ...args], { ...(cwd ? { cwd } : {}), stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`runsc ${args[0]} exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`))));
      });
    this.live.push(...ids);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < ids.length) {
        const id = ids[next++] as string;
        await run(['restore', '--detach', `--image-path=${imageDir}`, id], this.bundle(id));
        await run(['exec', id, 'true']);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.parallelism, n) }, worker));
    return ids;
  }

  /** `memory.usage_in_bytes` of one restored sandbox's memory cgroup (NaN once it is gone). */
  cgroupMemory(id: string): number {
    try {
      return Number(readFileSync(`/sys/fs/cgroup/memory/${FLOOR_CGROUP}/${id}/memory.usage_in_bytes`, 'utf8').trim());
    } catch {
      return Number.NaN;
    }
  }

  /** Deletes one sandbox and its cgroups; never throws, so that cleanup goes on for the others. */
  destroy(id: string): void {
    spawnSync('runsc', [`--root=${this.root}`, 'delete', '-force', id], { stdio: 'ignore' });
    // The sandbox's processes take a moment to leave their cgroups after delete: retry the removal.
    spawnSync('sh', ['-c', `for i in 1 2 3 4 5 6 7 8 9 10; do left=0; for c in /sys/fs/cgroup/*/${FLOOR_CGROUP}/${id}; do [ -d "$c" ] && { rmdir "$c" 2>/dev/null || left=1; }; done; [ $left = 0 ] && break; sleep 0.3; done; true`]);
    this.live = this.live.filter((live) => live !== id);
  }

  /** Deletes every sandbox this floor restored. */
  destroyAll(): void {
    for (const id of [...this.live]) this.destroy(id);
    spawnSync('sh', ['-c', `for c in /sys/fs/cgroup/*/${FLOOR_CGROUP}; do rmdir "$c" 2>/dev/null; done; true`]);
  }
}
