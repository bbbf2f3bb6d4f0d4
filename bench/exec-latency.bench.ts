/**
 * Where the time of one `exec true` goes, on one machine session through the
 * gVisor driver directly (no server, no pipeline): N sequential calls,
 * interleaved in the same loop with plain `runsc exec true` into a hand-made
 * sandbox (the floor: busybox `sleep` as init, same rootfs) and into the
 * driver's own sandbox (same cgroup and flags, with and without the
 * `--internal-pid-file` the driver passes), so the ratios compare like with
 * like under the same load.
 *
 * Then a breakdown: the driver's relay script, with probes inserted at fixed
 * points of the protocol (each an `echo` builtin of `$EPOCHREALTIME` to
 * stderr, no extra process), run through `runsc exec` the way the driver runs
 * it. The sandbox's clock is the host's, so host and sandbox stamps line up
 * to a fraction of a millisecond. The relay's pid also tells how many
 * processes each call created in the sandbox (pids are handed out in order).
 * Busybox image built here; needs root, runsc and busybox-static.
 * Usage: npx tsx bench/exec-latency.bench.ts [calls=100] [breakdownCalls=50]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxHandle } from '../packages/runtime/src/core/sandbox-driver.js';
import { GvisorDriver, mountsUnder } from '../packages/runtime/src/drivers/gvisor/index.js';
import { commandScript, RELAY_SCRIPT, TOOLBOX_PATH } from '../packages/runtime/src/drivers/gvisor/in-sandbox-scripts.js';
import { LoopDisks } from '../packages/runtime/src/storage/loop-disks.js';
import { buildBusyboxRootfs } from '../packages/runtime/test/support/busybox-rootfs.js';
import { quantile, timed } from './stats.js';
import { floorSandboxSpec } from './runsc-floor.js';

const calls = Number.parseInt(process.argv[2] ?? '100', 10);
const breakdownCalls = Number.parseInt(process.argv[3] ?? '50', 10);
const WARM_UP = 5;
const RESOURCES = { cpus: 1, memoryMb: 512, maxProcesses: 128, diskMb: 1024 };

const work = mkdtempSync('/var/tmp/airlock-bench-execlat-');
const rootfsDir = join(work, 'rootfs');
await buildBusyboxRootfs(rootfsDir);
const stateRoot = join(work, 'state');
const runscRoot = join(stateRoot, 'runsc');
const disks = new LoopDisks({ root: join(work, 'disks') });
const driver = new GvisorDriver({ stateRoot });
await driver.checkHost();

/** Wall-clock microseconds, comparable with the sandbox's `$EPOCHREALTIME`. */
const nowUs = (): number => (performance.timeOrigin + performance.now()) * 1000;

/** Runs `runsc <args>` to its end (pipes closed); rejects on a non-zero exit. */
function runsc(args: string[], onStderr?: (text: string) => void, root = runscRoot): Promise<{ exitUs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/runsc', [`--root=${root}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let exitUs = 0;
    let code: number | null = null;
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => onStderr?.(chunk.toString()));
    child.once('error', reject);
    child.once('exit', (exitCode) => {
      exitUs = nowUs();
      code = exitCode;
    });
    child.once('close', () => (code === 0 ? resolve({ exitUs }) : reject(new Error(`runsc ${args.join(' ').slice(0, 80)} exited ${code}`))));
  });
}

/** The floor: a hand-made sandbox (busybox \`sleep\` as init, the same rootfs), plain \`runsc exec\` into it. */
class FloorSandbox {
  readonly root = join(work, 'floor-runsc');
  readonly id = `execlat-floor-${process.pid}`;
  private readonly bundle = join(work, 'floor-bundle');
  private readonly cgroup = `airlock-bench-floor/${this.id}`;

  start(): void {
    mkdirSync(this.bundle, { recursive: true });
    mkdirSync(this.root, { recursive: true });
    const spec = floorSandboxSpec({ rootfs: rootfsDir, init: ['/bin/sleep', '1000000'], path: '/bin', cgroupsPath: `/${this.cgroup}`, networkNamespace: true });
    writeFileSync(join(this.bundle, 'config.json'), JSON.stringify(spec));
    // Not through pipes: `run --detach` leaves them open in the sandbox, and the call would never return.
    const started = spawnSync('runsc', [`--root=${this.root}`, '--network=none', '--overlay2=root:memory', 'run', '--detach', this.id], { cwd: this.bundle, stdio: 'ignore' });
    if (started.status !== 0) throw new Error(`runsc run of ${this.id} failed`);
  }

  destroy(): void {
    spawnSync('runsc', [`--root=${this.root}`, 'delete', '-force', this.id], { stdio: 'ignore' });
    spawnSync('sh', ['-c', `for c in /sys/fs/cgroup/*/${this.cgroup}; do [ -d "$c" ] && rmdir "$c"; done; rmdir /sys/fs/cgroup/*/airlock-bench-floor 2>/dev/null; true`]);
  }
}

/** `p50 / p95` of samples, one decimal. */
function cells(samples: number[]): string {
  return `${quantile(samples, 0.5).toFixed(1)} | ${quantile(samples, 0.95).toFixed(1)}`;
}

/** The relay with probes. Each anchor is a line of the protocol that every relay version has. */
function probedRelay(): string {
  const probe = (label: string): string => `echo "PROBE ${label} $$ $EPOCHREALTIME" >&2\n`;
  const anchors: [string, string][] = [
    ['J=$R/$s\n', 'claimed'],
    ['echo "$2" >$J.go\n', 'go'],
    ['read -r rc <&5\n', 'exit-code'],
  ];
  let script = probe('relay-started') + RELAY_SCRIPT;
  for (const [anchor, label] of anchors) {
    if (!script.includes(anchor)) throw new Error(`relay script has no line ${JSON.stringify(anchor)}; update the probes`);
    script = script.replace(anchor, () => anchor + probe(label));
  }
  const exit = script.lastIndexOf('exit ${rc:-125}');
  if (exit < 0) throw new Error('relay script has no final exit; update the probes');
  return script.slice(0, exit) + probe('relay-exits') + script.slice(exit);
}

const PHASES: [string, string, string][] = [
  ['spawn', 'relay-started', '`runsc exec` spawned → relay shell runs'],
  ['relay-started', 'claimed', '→ slot claimed'],
  ['claimed', 'go', '→ "go" written (start marker printed)'],
  ['go', 'exit-code', '→ exit code read (command started, ran, exited)'],
  ['exit-code', 'relay-exits', '→ output drained, helpers gone, relay exits'],
  ['relay-exits', 'host-exit', '→ `runsc exec` exits on the host'],
  ['spawn', 'host-exit', 'total'],
];

const sessionId = 'bench-execlat';
const diskDir = await disks.create(sessionId, RESOURCES.diskMb);
const sandboxId = `execlat-${process.pid}`;
const spec = { sandboxId, sessionId, rootfsDir, diskDir, stateDir: join(stateRoot, 'sandboxes', sandboxId), hostname: 'execlat', resources: RESOURCES, env: {} };
const floor = new FloorSandbox();
let handle: SandboxHandle | undefined;
try {
  handle = await driver.start(spec);
  floor.start();
  const session = handle;
  const containerId = `airlock-${sandboxId}`;
  const execTrue = () => driver.exec(session, { argv: ['true'], cwd: '/workspace', env: {}, timeoutMs: 60_000 });

  const airlock: number[] = [];
  const startMs: number[] = [];
  const floorHandMade: number[] = [];
  const floorSame: number[] = [];
  const floorPidFile: number[] = [];
  const pidFile = join(work, 'exec.pid');
  for (let i = 0; i < WARM_UP + calls; i++) {
    let start: number | undefined;
    const a = await timed(async () => {
      const outcome = await execTrue();
      if (outcome.exitCode !== 0) throw new Error(`exec true exited ${outcome.exitCode}`);
      start = outcome.startMs;
    });
    const f = await timed(() => runsc(['exec', floor.id, 'true'], undefined, floor.root));
    const s = await timed(() => runsc(['exec', containerId, 'true']));
    const p = await timed(() => runsc(['exec', `--internal-pid-file=${pidFile}`, containerId, 'true']));
    if (i < WARM_UP) continue;
    airlock.push(a);
    if (start !== undefined) startMs.push(start);
    floorHandMade.push(f);
    floorSame.push(s);
    floorPidFile.push(p);
  }
  // The same calls back to back: no idle time in between for the sandbox's own background work.
  const backToBack: number[] = [];
  for (let i = 0; i < calls; i++) backToBack.push(await timed(execTrue));
  const ratio = (samples: number[]): string => `${(quantile(airlock, 0.5) / quantile(samples, 0.5)).toFixed(2)}×`;
  const lines = [
    `### Exec latency: ${calls} sequential \`exec true\`, interleaved (after ${WARM_UP} warm-up rounds)`,
    '',
    '| what | p50 (ms) | p95 (ms) | Airlock p50 ÷ this p50 |',
    '|---|---|---|---|',
    `| Airlock \`exec true\` through the driver | ${cells(airlock)} | |`,
    `| of which until the start marker (\`startMs\`) | ${cells(startMs)} | |`,
    `| Airlock \`exec true\`, ${calls} calls back to back (not interleaved) | ${cells(backToBack)} | |`,
    `| floor: plain \`runsc exec true\`, hand-made sandbox | ${cells(floorHandMade)} | ${ratio(floorHandMade)} |`,
    `| plain \`runsc exec true\` into the driver's sandbox | ${cells(floorSame)} | ${ratio(floorSame)} |`,
    `| the same with \`--internal-pid-file\` | ${cells(floorPidFile)} | ${ratio(floorPidFile)} |`,
  ];
  process.stdout.write(`${lines.join('\n')}\n\n`);

  // Breakdown: the probed relay through `runsc exec`, as execCommand runs it (without the supervisor).
  const relay = probedRelay();
  const command = commandScript(['true'], '/workspace', {});
  const phases = new Map<string, number[]>(PHASES.map(([, , name]) => [name, []]));
  const created: number[] = [];
  let previousPid: number | undefined;
  for (let i = 0; i < WARM_UP + breakdownCalls; i++) {
    const stamps = new Map<string, number>();
    let stderr = '';
    stamps.set('spawn', nowUs());
    const { exitUs } = await runsc(['exec', containerId, TOOLBOX_PATH, 'sh', '-c', relay, 'airlock-exec', command, '0'], (text) => (stderr += text));
    stamps.set('host-exit', exitUs);
    let pid: number | undefined;
    for (const match of stderr.matchAll(/PROBE (\S+) (\d+) (\d+)\.(\d+)/g)) {
      stamps.set(match[1] ?? '', Number(match[3]) * 1e6 + Number(match[4]));
      pid = Number(match[2]);
    }
    if (pid !== undefined && previousPid !== undefined && i >= WARM_UP) created.push(pid - previousPid);
    previousPid = pid;
    if (i < WARM_UP) continue;
    for (const [from, to, name] of PHASES) {
      const a = stamps.get(from);
      const b = stamps.get(to);
      if (a !== undefined && b !== undefined) phases.get(name)?.push((b - a) / 1000);
    }
  }
  const breakdown = [
    `### Breakdown: ${breakdownCalls} calls of the relay with probes`,
    '',
    '| phase | p50 (ms) | p95 (ms) |',
    '|---|---|---|',
    ...PHASES.map(([, , name]) => `| ${name} | ${cells(phases.get(name) ?? [])} |`),
    '',
    `Processes created in the sandbox per call (pid delta between relays): p50 ${quantile(created, 0.5)}, min ${Math.min(...created)}, max ${Math.max(...created)}.`,
  ];
  process.stdout.write(`${breakdown.join('\n')}\n\n`);
} finally {
  floor.destroy();
  if (handle) await driver.destroy(handle).catch((error: unknown) => process.stderr.write(`destroy: ${String(error)}\n`));
  await disks.destroy(sessionId).catch((error: unknown) => process.stderr.write(`disk: ${String(error)}\n`));
  if ((await mountsUnder(work)).length === 0) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`mounts left under ${work}; not removed\n`);
}
