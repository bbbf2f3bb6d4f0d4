/**
 * Where the time of one `exec true` goes, on one machine through the gVisor
 * driver directly (no server, no pipeline): N sequential calls, interleaved
 * in one loop with its floors under the same load:
 *
 * - the agent's channel: an empty request (PING) over the same connection;
 * - the agent round trip: the same EXEC frames on the same connection,
 *   without the driver around them (fork + exec inside gVisor + channel);
 * - plain `runsc exec true` into a hand-made sandbox (busybox `sleep` as
 *   init, same rootfs), and into the driver's own sandbox.
 *
 * Busybox image built here; needs root, runsc and busybox-static.
 * Usage: npx tsx bench/exec-latency.bench.ts [calls=100]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxHandle } from '../packages/runtime/src/core/sandbox-driver.js';
import type { AgentConnection } from '../packages/runtime/src/drivers/agent/agent-connection.js';
import { execThroughAgent } from '../packages/runtime/src/drivers/agent/agent-exec.js';
import { GvisorDriver, mountsUnder } from '../packages/runtime/src/drivers/gvisor/index.js';
import { LoopDisks } from '../packages/runtime/src/storage/loop-disks.js';
import { buildBusyboxRootfs } from '../packages/runtime/test/support/busybox-rootfs.js';
import { quantile, timed } from './stats.js';
import { floorSandboxSpec } from './runsc-floor.js';

const calls = Math.max(20, Number.parseInt(process.argv[2] ?? '100', 10));
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

/** Runs `runsc <args>` to its end (pipes closed); rejects on a non-zero exit. */
function runsc(args: string[], root = runscRoot): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/runsc', [`--root=${root}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let code: number | null = null;
    child.stdout.resume();
    child.stderr.resume();
    child.once('error', reject);
    child.once('exit', (exitCode) => (code = exitCode));
    child.once('close', () => (code === 0 ? resolve() : reject(new Error(`runsc ${args.join(' ').slice(0, 80)} exited ${code}`))));
  });
}

/** The floor: a hand-made sandbox (busybox `sleep` as init, the same rootfs), plain `runsc exec` into it. */
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

/** `p50 | p99` of samples, one decimal. */
function cells(samples: number[]): string {
  return `${quantile(samples, 0.5).toFixed(1)} | ${quantile(samples, 0.99).toFixed(1)}`;
}

const sessionId = 'bench-execlat';
const diskDir = await disks.create(sessionId, RESOURCES.diskMb);
const sandboxId = `execlat-${process.pid}`;
const spec = { sandboxId, sessionId, rootfs: { kind: 'directory' as const, path: rootfsDir }, disk: { kind: 'directory' as const, path: diskDir }, stateDir: join(stateRoot, 'sandboxes', sandboxId), hostname: 'execlat', resources: RESOURCES, env: {} };
const floor = new FloorSandbox();
let handle: SandboxHandle | undefined;
try {
  handle = await driver.start(spec);
  floor.start();
  const session = handle;
  // The driver's own connection to this sandbox's agent, for the rows without the driver around them.
  const agents = (driver as unknown as { agents: { connectionOf(handle: SandboxHandle): Promise<AgentConnection> } }).agents;
  const connection = await agents.connectionOf(session);
  const request = { argv: ['true'], cwd: '/workspace', env: {}, timeoutMs: 60_000 };
  const airlock: number[] = [];
  const startMs: number[] = [];
  const agentTrip: number[] = [];
  const ping: number[] = [];
  const floorHandMade: number[] = [];
  const floorSame: number[] = [];
  for (let i = 0; i < WARM_UP + calls; i++) {
    let start: number | undefined;
    const a = await timed(async () => {
      const outcome = await driver.exec(session, request);
      if (outcome.exitCode !== 0) throw new Error(`exec true exited ${outcome.exitCode}`);
      start = outcome.startMs;
    });
    const t = await timed(() => execThroughAgent(connection, request, { processLimit: 0, revive: async () => false }));
    const p = await timed(() => connection.ping(5_000));
    const f = await timed(() => runsc(['exec', floor.id, 'true'], floor.root));
    const s = await timed(() => runsc(['exec', `airlock-${sandboxId}`, 'true']));
    if (i < WARM_UP) continue;
    airlock.push(a);
    if (start !== undefined) startMs.push(start);
    agentTrip.push(t);
    ping.push(p);
    floorHandMade.push(f);
    floorSame.push(s);
  }
  const backToBack: number[] = [];
  for (let i = 0; i < calls; i++) backToBack.push(await timed(() => driver.exec(session, request)));
  const ratio = (samples: number[]): string => `${(quantile(airlock, 0.5) / quantile(samples, 0.5)).toFixed(2)}×`;
  const lines = [
    `### Exec latency: ${calls} sequential \`exec true\`, interleaved (after ${WARM_UP} warm-up rounds)`,
    '',
    '| what | p50 (ms) | p99 (ms) | Airlock p50 ÷ this p50 |',
    '|---|---|---|---|',
    `| Airlock \`exec true\` through the driver | ${cells(airlock)} | |`,
    `| of which until the command started (\`startMs\`) | ${cells(startMs)} | |`,
    `| Airlock \`exec true\`, ${calls} calls back to back | ${cells(backToBack)} | |`,
    `| floor: the agent round trip (same EXEC frames, no driver) | ${cells(agentTrip)} | ${ratio(agentTrip)} |`,
    `| floor: the agent channel (PING, an empty request) | ${cells(ping)} | ${ratio(ping)} |`,
    `| plain \`runsc exec true\`, hand-made sandbox | ${cells(floorHandMade)} | ${ratio(floorHandMade)} |`,
    `| plain \`runsc exec true\` into the driver's sandbox | ${cells(floorSame)} | ${ratio(floorSame)} |`,
  ];
  process.stdout.write(`${lines.join('\n')}\n\n`);
} finally {
  floor.destroy();
  if (handle) await driver.destroy(handle).catch((error: unknown) => process.stderr.write(`destroy: ${String(error)}\n`));
  await disks.destroy(sessionId).catch((error: unknown) => process.stderr.write(`disk: ${String(error)}\n`));
  if ((await mountsUnder(work)).length === 0) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`mounts left under ${work}; not removed\n`);
}
