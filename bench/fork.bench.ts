/**
 * Issue 4's figures: fork of a running session into N = 1, 4, 16 branches
 * through the SDK against a real server (snapshot included; wall time until
 * every branch has answered a command), with each branch's host memory (RSS
 * and PSS of its sandbox processes) and disk; beside N plain `runsc restore`
 * of a checkpoint of the same image holding the same memory, in the same run.
 * Usage: npx tsx bench/fork.bench.ts [counts, default 1,4,16]
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, openDataDir, openImageCatalog } from '@airlock/runtime';
import { ForkError, Sandbox } from '@airlock/sdk';
import { timed } from './stats.js';

const counts = (process.argv[2] ?? '1,4,16').split(',').map(Number);
const work = mkdtempSync('/var/tmp/airlock-bench-fork-');
// The state every branch inherits: a Python process holding 64 MB.
const HOLD = "import os, time\nb = bytearray(os.urandom(64 * 1024 * 1024))\nopen('/tmp/held', 'w').write('1')\ntime.sleep(100000)";
const MB = 1024 * 1024;

/** RSS and PSS (bytes) of the host processes whose command line mentions `marker`. */
function hostMemory(marker: string): { rss: number; pss: number } {
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
class FloorFork {
  private readonly root = join(work, 'floor-root');
  private readonly spec: Record<string, unknown>;
  private live: string[] = [];

  constructor(rootfs: string) {
    mkdirSync(this.root, { recursive: true });
    this.spec = {
      ociVersion: '1.0.0',
      // The holder is the container's first process: one started by `runsc exec` keeps host FDs and spoils the restore.
      process: { user: { uid: 0, gid: 0 }, args: ['/usr/bin/python3', '-c', HOLD], env: ['PATH=/usr/local/bin:/usr/bin:/bin'], cwd: '/' },
      root: { path: rootfs, readonly: false },
      hostname: 'floor',
      mounts: [{ destination: '/proc', type: 'proc', source: 'proc' }, { destination: '/tmp', type: 'tmpfs', source: 'tmpfs' }],
      linux: { namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }] },
    };
  }

  private bundle(id: string): string {
    const dir = join(work, `floor-bundle-${id}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...this.spec, linux: { ...(this.spec['linux'] as object), cgroupsPath: `/airlock-fork-floor/${id}` } }));
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
   * Restores run 4 at a time, like Airlock's fork (16 at once overloads this 2-core host kind).
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
    await Promise.all(Array.from({ length: Math.min(4, n) }, worker));
    return ids;
  }

  destroy(id: string): void {
    // Never throws: cleanup must go on for the other containers.
    spawnSync('runsc', [`--root=${this.root}`, 'delete', '-force', id], { stdio: 'ignore' });
    // The sandbox's processes take a moment to leave their cgroups after delete: retry the removal.
    spawnSync('sh', ['-c', `for i in 1 2 3 4 5 6 7 8 9 10; do left=0; for c in /sys/fs/cgroup/*/airlock-fork-floor/${id}; do [ -d "$c" ] && { rmdir "$c" 2>/dev/null || left=1; }; done; [ $left = 0 ] && break; sleep 0.3; done; true`]);
    this.live = this.live.filter((live) => live !== id);
  }

  destroyAll(): void {
    for (const id of [...this.live]) this.destroy(id);
    spawnSync('sh', ['-c', 'for c in /sys/fs/cgroup/*/airlock-fork-floor; do rmdir "$c" 2>/dev/null; done; true']);
  }
}

const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench', maxForkBranches: 64 });
const connection = { url: server.url, token: 'bench' };
const image = await openImageCatalog(openDataDir(join(work, 'data'))).get('debian-bookworm');
const floor = new FloorFork(image.rootfsDir);
const lines = [
  '| N | Airlock fork → all answered (ms) | of which the fork call (ms) | per branch (ms) | parent paused (ms) | branch RSS / PSS (MiB) | branch disk (MiB) | snapshot (MiB) | runsc restore ×N → all answered (ms) | floor RSS / PSS (MiB) | ratio |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
];
let parent: Sandbox | undefined;
try {
  parent = await Sandbox.create(connection);
  await parent.files.write('/workspace/hold.py', HOLD);
  await parent.commands.run('nohup python3 /workspace/hold.py >/dev/null 2>&1 & while [ ! -f /tmp/held ]; do sleep 0.1; done');
  const floorImage = join(work, 'floor-image');
  floor.template(floorImage);

  for (const n of counts) {
    try {
      lines.push(await measure(parent, floorImage, n));
    } catch (error) {
      lines.push(`| ${n} | failed: ${error instanceof Error ? error.message.replace(/\|/g, '/') : String(error)} |`);
    }
    process.stdout.write(`${lines.at(-1)}\n`);
  }
  process.stdout.write(`\n### Fork of a session holding 64 MB (Python), ${new Date().toISOString().slice(0, 10)}\n\n${lines.join('\n')}\n`);
} finally {
  floor.destroyAll();
  await parent?.kill().catch(() => undefined);
  await server.close();
  rmSync(work, { recursive: true, force: true });
}

/** One row: Airlock's fork of N, then the floor's N restores. */
async function measure(parent: Sandbox, floorImage: string, n: number): Promise<string> {
  let branches: Sandbox[] = [];
  let forkMs = 0;
  const airlockMs = await timed(async () => {
    try {
      forkMs = await timed(async () => {
        branches = await parent.fork({ count: n });
      });
    } catch (error) {
      branches = error instanceof ForkError ? (error as ForkError<Sandbox>).created : [];
      await Promise.all(branches.map((branch) => branch.kill()));
      throw error;
    }
    await Promise.all(branches.map((branch) => branch.commands.run(['true'])));
  });
  const audit = await parent.audit();
  const snapshotRecord = audit.filter((record) => record.type === 'snapshot.created').at(-1);
  const pausedMs = Number(snapshotRecord?.data['pausedMs'] ?? Number.NaN);
  // The sandbox id is on the command lines of both the sandbox and its gofer (bundle path).
  const memory = branches.map((branch) => hostMemory(branch.info.sandboxId ?? 'missing'));
  const disk = branches.map((branch) => statSync(join(work, 'data', 'disks', branch.id, 'disk.ext4')).blocks * 512);
  const snapshot = await parent.snapshots.get(String(snapshotRecord?.data['snapshotId']));
  await Promise.all(branches.map((branch) => branch.kill()));
  await parent.snapshots.remove(snapshot.id);

  let ids: string[] = [];
  try {
    const floorMs = await timed(async () => {
      ids = await floor.restore(floorImage, n);
    });
    const floorMemory = ids.map((id) => hostMemory(id));
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    const mib = (bytes: number) => (bytes / MB).toFixed(0);
    return `| ${n} | ${airlockMs.toFixed(0)} | ${forkMs.toFixed(0)} | ${(airlockMs / n).toFixed(0)} | ${pausedMs.toFixed(0)} | ${mib(mean(memory.map((m) => m.rss)))} / ${mib(mean(memory.map((m) => m.pss)))} | ${mib(mean(disk))} | ${mib(snapshot.sizeBytes)} | ${floorMs.toFixed(0)} | ${mib(mean(floorMemory.map((m) => m.rss)))} / ${mib(mean(floorMemory.map((m) => m.pss)))} | ${(airlockMs / floorMs).toFixed(2)}× |`;
  } finally {
    floor.destroyAll();
  }
}
