/**
 * Memory growth per exec on one machine session, through the gVisor driver
 * directly (no server): N `true` commands, sampling every K calls the
 * sandbox's cgroup memory (memory.usage_in_bytes), the sentry's RSS and the
 * size of a checkpoint image. A checkpoint itself inflates the sentry's heap
 * for a while, so the image is taken from a twin sandbox that runs the same
 * calls in lockstep; the first sandbox is never checkpointed. Beside it the
 * floor: the same with plain `runsc exec true` into hand-made sandboxes.
 * Then suspend/restore cycles of a fresh session (4 calls, checkpoint,
 * restore, one call), timing the restore. Busybox image built here; needs
 * root, runsc and busybox-static.
 * Usage: npx tsx bench/exec-memory-growth.bench.ts [calls=200] [every=25] [cycles=10] [parts=airlock,floor,floor-bounded]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxHandle, SandboxSpec } from '../packages/runtime/src/core/sandbox-driver.js';
import { GvisorDriver, mountsUnder } from '../packages/runtime/src/drivers/gvisor/index.js';
import { LoopDisks } from '../packages/runtime/src/storage/loop-disks.js';
import { buildBusyboxRootfs } from '../packages/runtime/test/support/busybox-rootfs.js';
import { quantile, timed } from './stats.js';
import { floorSandboxSpec } from './runsc-floor.js';

const calls = Number.parseInt(process.argv[2] ?? '200', 10);
const every = Number.parseInt(process.argv[3] ?? '25', 10);
const cycles = Number.parseInt(process.argv[4] ?? '10', 10);
const parts = new Set((process.argv[5] ?? 'airlock,floor,floor-bounded').split(','));
const CALLS_PER_CYCLE = 4;
const MB = 1024 * 1024;
const RESOURCES = { cpus: 1, memoryMb: 512, maxProcesses: 128, diskMb: 1024 };
// The twin is checkpointed every K calls, and a checkpoint inflates the sentry's heap: at 512 MB it
// was OOM-killed before 200 calls (before the fix), so it gets room to report its images.
const TWIN_RESOURCES = { ...RESOURCES, memoryMb: 2048 };

const work = mkdtempSync('/var/tmp/airlock-bench-execmem-');
const rootfsDir = join(work, 'rootfs');
await buildBusyboxRootfs(rootfsDir);

/** One sample: the measured sandbox's cgroup and sentry RSS, the twin's image and its cgroup right after. */
interface Sample {
  calls: number;
  cgroup: number;
  rss: number;
  image: number;
  twinCgroup: number;
}

/** memory.usage_in_bytes of a v1 memory cgroup (path relative to the hierarchy). */
function cgroupUsage(cgroupPath: string): number {
  return Number(readFileSync(join('/sys/fs/cgroup/memory', cgroupPath, 'memory.usage_in_bytes'), 'utf8').trim());
}

/** VmRSS of the sentry: the `runsc boot` host process whose command line names the container. */
function sentryRss(containerId: string): number {
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (!args.includes('boot') || !args.includes(containerId)) continue;
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      // the process went away
    }
  }
  return Number.NaN;
}

/** Bytes a directory takes on disk. */
function diskUsage(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const info = statSync(join(dir, name));
    total += info.isDirectory() ? diskUsage(join(dir, name)) : info.blocks * 512;
  }
  return total;
}

function printSamples(title: string, samples: Sample[]): void {
  const lines = [
    `### ${title}`,
    '',
    '| calls | cgroup usage (MiB) | sentry RSS (MiB) | checkpoint image (MiB) | twin cgroup after its checkpoints (MiB) |',
    '|---|---|---|---|---|',
  ];
  for (const s of samples) lines.push(`| ${s.calls} | ${(s.cgroup / MB).toFixed(1)} | ${(s.rss / MB).toFixed(1)} | ${(s.image / MB).toFixed(1)} | ${(s.twinCgroup / MB).toFixed(1)} |`);
  const first = samples[0];
  const last = samples.at(-1);
  if (first && last && last.calls > first.calls) {
    const per = (from: Sample, field: 'cgroup' | 'rss' | 'image'): string => `${((last[field] - from[field]) / (last.calls - from.calls) / 1024).toFixed(0)} KiB`;
    lines.push('', `Per call (first → last sample): cgroup ${per(first, 'cgroup')}, sentry RSS ${per(first, 'rss')}, image ${per(first, 'image')}.`);
    const middle = samples[Math.floor(samples.length / 2)];
    if (middle && last.calls > middle.calls) {
      lines.push(`Second half (${middle.calls} → ${last.calls}): cgroup ${per(middle, 'cgroup')}, sentry RSS ${per(middle, 'rss')}, image ${per(middle, 'image')}.`);
    }
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

// ---------------------------------------------------------------- Airlock

const stateRoot = join(work, 'state');
const disks = new LoopDisks({ root: join(work, 'disks') });
const driver = new GvisorDriver({ stateRoot });
await driver.checkHost();
const handles = new Set<SandboxHandle>();
const sessions: string[] = [];
let counter = 0;

async function startSession(resources = RESOURCES): Promise<{ spec: SandboxSpec; handle: SandboxHandle }> {
  counter += 1;
  const sessionId = `bench-execmem-${counter}`;
  const diskDir = await disks.create(sessionId, RESOURCES.diskMb);
  sessions.push(sessionId);
  const spec = { ...specOn(sessionId, diskDir), resources };
  const handle = await driver.start(spec);
  handles.add(handle);
  return { spec, handle };
}

function specOn(sessionId: string, diskDir: string): SandboxSpec {
  counter += 1;
  const sandboxId = `execmem${counter}-${process.pid}`;
  return { sandboxId, sessionId, rootfs: { kind: 'directory', path: rootfsDir }, disk: { kind: 'directory', path: diskDir }, stateDir: join(stateRoot, 'sandboxes', sandboxId), hostname: 'execmem', resources: RESOURCES, env: {} };
}

async function run(handle: SandboxHandle, argv: string[]): Promise<string> {
  let out = '';
  const collect = (chunk: Buffer): void => {
    out += chunk.toString();
  };
  const outcome = await driver.exec(handle, { argv, cwd: '/workspace', env: {}, timeoutMs: 60_000, onStdout: collect, onStderr: collect });
  if (outcome.exitCode !== 0) throw new Error(`${argv.join(' ')} exited ${outcome.exitCode}: ${out}`);
  return out;
}

async function imageBytes(handle: SandboxHandle, name: string): Promise<number> {
  const image = join(work, name);
  const bytes = (await driver.checkpoint(handle, image, { leaveRunning: true })).bytes;
  rmSync(image, { recursive: true, force: true });
  return bytes;
}

/** What the sandbox holds that could cost memory: /tmp, processes, mounts of /proc, the guest's meminfo. */
async function insideView(handle: SandboxHandle): Promise<string> {
  const script = [
    'echo "/tmp entries: $(ls -A /tmp | wc -l); processes: $(ps -o pid | tail -n +2 | wc -l)"',
    'grep " /proc " /proc/mounts',
    'grep -E "^(MemFree|Shmem|Mapped):" /proc/meminfo | tr -s " " | tr "\\n" ";"; echo',
  ].join('\n');
  // The image's busybox (the test rootfs): the machine has no toolbox of Airlock's any more.
  return run(handle, ['sh', '-c', script]);
}

/** Restore time after a checkpoint of `from` (which is destroyed), and the first call after it. */
async function suspendAndRestore(from: { spec: SandboxSpec; handle: SandboxHandle }, name: string) {
  const image = join(work, name);
  const checkpoint = await driver.checkpoint(from.handle, image, { leaveRunning: false });
  await driver.destroy(from.handle);
  handles.delete(from.handle);
  const spec = specOn(from.spec.sessionId, from.spec.disk.path);
  let handle: SandboxHandle | undefined;
  const restoreMs = await timed(async () => {
    handle = await driver.restore(spec, image);
  });
  if (!handle) throw new Error('restore returned no handle');
  handles.add(handle);
  const restored = handle;
  const firstCallMs = await timed(() => run(restored, ['true']));
  rmSync(image, { recursive: true, force: true });
  return { next: { spec, handle: restored }, imageMb: checkpoint.bytes / MB, restoreMs, firstCallMs };
}

async function measureAirlock(): Promise<void> {
  const samples: Sample[] = [];
  const execMs: number[] = [];
  try {
    const measured = await startSession();
    const twin = await startSession(TWIN_RESOURCES);
    await Promise.all([run(measured.handle, ['true']), run(twin.handle, ['true'])]); // page cache of the binaries
    process.stdout.write(`inside, after 1 call:\n${await insideView(measured.handle)}\n`);
    const sample = async (done: number): Promise<void> => {
      const cgroup = cgroupUsage(`airlock/${measured.handle.sandboxId}`);
      const rss = sentryRss(`airlock-${measured.handle.sandboxId}`);
      const image = await imageBytes(twin.handle, `image-${done}`);
      samples.push({ calls: done, cgroup, rss, image, twinCgroup: cgroupUsage(`airlock/${twin.handle.sandboxId}`) });
      process.stderr.write(`sample ${JSON.stringify(samples.at(-1))}\n`);
    };
    await sample(0);
    for (let done = 1; done <= calls; done++) {
      execMs.push(await timed(() => run(measured.handle, ['true'])));
      await run(twin.handle, ['true']);
      if (done % every === 0 || done === calls) await sample(done);
    }
    process.stdout.write(`inside, after ${calls + 1} calls:\n${await insideView(measured.handle)}\n`);
    printSamples(`Airlock machine session: ${calls} × exec \`true\` (exec p50 ${quantile(execMs, 0.5).toFixed(0)} ms)`, samples);

    // Restore of the grown session, then suspend/restore cycles of a fresh one.
    const grown = await suspendAndRestore(measured, 'image-grown');
    const lines = [
      `### Suspend/restore cycles of a fresh session (${CALLS_PER_CYCLE} calls each)`,
      '',
      `Restore of the session above after ${calls + 1} calls: image ${grown.imageMb.toFixed(1)} MiB, restore ${grown.restoreMs.toFixed(0)} ms, first call ${grown.firstCallMs.toFixed(0)} ms.`,
      '',
      '| cycle | image (MiB) | restore (ms) | first call after (ms) | cgroup after (MiB) |',
      '|---|---|---|---|---|',
    ];
    let session = await startSession();
    for (let cycle = 1; cycle <= cycles; cycle++) {
      for (let k = 0; k < CALLS_PER_CYCLE; k++) await run(session.handle, ['true']);
      const result = await suspendAndRestore(session, `image-cycle-${cycle}`);
      session = result.next;
      const cgroupMb = cgroupUsage(`airlock/${session.handle.sandboxId}`) / MB;
      lines.push(`| ${cycle} | ${result.imageMb.toFixed(1)} | ${result.restoreMs.toFixed(0)} | ${result.firstCallMs.toFixed(0)} | ${cgroupMb.toFixed(1)} |`);
    }
    process.stdout.write(`${lines.join('\n')}\n\n`);
  } catch (error) {
    // A sandbox that dies (OOM) is a result too: print what was measured up to then.
    process.stdout.write(`Airlock run stopped: ${error instanceof Error ? error.message : String(error)}\n\n`);
    printSamples(`Airlock machine session (partial): exec \`true\` (exec p50 ${quantile(execMs, 0.5).toFixed(0)} ms)`, samples);
  } finally {
    for (const handle of handles) await driver.destroy(handle).catch((error: unknown) => process.stderr.write(`destroy: ${String(error)}\n`));
    for (const sessionId of sessions) await disks.destroy(sessionId).catch((error: unknown) => process.stderr.write(`disk: ${String(error)}\n`));
  }
}

// ---------------------------------------------------------------- floor

/** A hand-made sandbox: busybox `sleep` as init, the same rootfs, plain `runsc exec true` per call. */
class FloorSandbox {
  readonly id: string;
  readonly cgroup: string;
  private readonly bundle: string;
  private static readonly root = join(work, 'floor-runsc');

  constructor(name: string) {
    this.id = `execmem-floor-${name}-${process.pid}`;
    this.cgroup = `airlock-bench-floor/${this.id}`;
    this.bundle = join(work, `floor-bundle-${name}`);
    mkdirSync(this.bundle, { recursive: true });
    const spec = floorSandboxSpec({ rootfs: rootfsDir, init: ['/bin/sleep', '1000000'], path: '/bin', cgroupsPath: `/${this.cgroup}`, networkNamespace: true });
    writeFileSync(join(this.bundle, 'config.json'), JSON.stringify(spec));
  }

  runsc(args: string[]): string {
    return execFileSync('runsc', [`--root=${FloorSandbox.root}`, '--network=none', '--overlay2=root:memory', ...args], { cwd: this.bundle, maxBuffer: 1 << 26 }).toString();
  }

  /** `run --detach`; with `boundedProc`, then the driver's mount of a procfs with a small dentry cache over /proc. */
  start(boundedProc: boolean): void {
    mkdirSync(FloorSandbox.root, { recursive: true });
    // Not through pipes: `run --detach` leaves them open in the sandbox, and the call would never return.
    const started = spawnSync('runsc', [`--root=${FloorSandbox.root}`, '--network=none', '--overlay2=root:memory', 'run', '--detach', this.id], { cwd: this.bundle, stdio: 'ignore' });
    if (started.status !== 0) throw new Error(`runsc run of ${this.id} failed`);
    // The mount the agent makes at boot (agent/src/system.c), done by hand here.
    if (boundedProc) this.runsc(['exec', '--cap', 'CAP_SYS_ADMIN', this.id, '/bin/busybox', 'mount', '-t', 'proc', '-o', 'dentry_cache_limit=64', 'proc', '/proc']);
  }

  image(): number {
    const image = join(work, `floor-image-${this.id}`);
    mkdirSync(image);
    this.runsc(['checkpoint', `--image-path=${image}`, '--compression=none', '--leave-running', this.id]);
    const bytes = diskUsage(image);
    rmSync(image, { recursive: true, force: true });
    return bytes;
  }

  destroy(): void {
    spawnSync('runsc', [`--root=${FloorSandbox.root}`, 'delete', '-force', this.id], { stdio: 'ignore' });
    spawnSync('sh', ['-c', `for c in /sys/fs/cgroup/*/${this.cgroup}; do [ -d "$c" ] && rmdir "$c"; done; rmdir /sys/fs/cgroup/*/airlock-bench-floor 2>/dev/null; true`]);
  }
}

async function measureFloor(boundedProc: boolean): Promise<void> {
  const samples: Sample[] = [];
  const execMs: number[] = [];
  const name = boundedProc ? 'bounded' : 'plain';
  const measured = new FloorSandbox(`${name}-measured`);
  const twin = new FloorSandbox(`${name}-twin`);
  try {
    measured.start(boundedProc);
    twin.start(boundedProc);
    for (const sandbox of [measured, twin]) sandbox.runsc(['exec', sandbox.id, 'true']);
    const sample = (done: number): void => {
      const cgroup = cgroupUsage(measured.cgroup);
      const rss = sentryRss(measured.id);
      const image = twin.image();
      samples.push({ calls: done, cgroup, rss, image, twinCgroup: cgroupUsage(twin.cgroup) });
    };
    sample(0);
    for (let done = 1; done <= calls; done++) {
      execMs.push(await timed(() => measured.runsc(['exec', measured.id, 'true'])));
      twin.runsc(['exec', twin.id, 'true']);
      if (done % every === 0 || done === calls) sample(done);
    }
    const what = boundedProc ? ', /proc mounted as the driver does' : ', /proc as runsc makes it';
    printSamples(`Floor: ${calls} × plain \`runsc exec true\`${what} (exec p50 ${quantile(execMs, 0.5).toFixed(0)} ms)`, samples);
  } finally {
    measured.destroy();
    twin.destroy();
  }
}

try {
  if (parts.has('airlock')) await measureAirlock();
  if (parts.has('floor')) await measureFloor(false);
  if (parts.has('floor-bounded')) await measureFloor(true);
} finally {
  if ((await mountsUnder(work)).length === 0) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`mounts left under ${work}; not removed\n`);
}
