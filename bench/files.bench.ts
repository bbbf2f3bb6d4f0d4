/**
 * File operations on one machine through the gVisor driver directly (no
 * server): write then read of 4 KiB and of 64 KiB through `driver.files`
 * (the agent), interleaved with their floors under the same load: the
 * agent's channel (PING), and the same write and read done the old way, a
 * plain `runsc exec` of `cat` into the same sandbox.
 * Busybox image built here; needs root, runsc and busybox-static.
 * Usage: npx tsx bench/files.bench.ts [samples=50]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxHandle } from '../packages/runtime/src/core/sandbox-driver.js';
import type { AgentConnection } from '../packages/runtime/src/drivers/agent/agent-connection.js';
import { GvisorDriver, mountsUnder } from '../packages/runtime/src/drivers/gvisor/index.js';
import { LoopDisks } from '../packages/runtime/src/storage/loop-disks.js';
import { buildBusyboxRootfs } from '../packages/runtime/test/support/busybox-rootfs.js';
import { quantile, timed } from './stats.js';

const samples = Math.max(20, Number.parseInt(process.argv[2] ?? '50', 10));
const WARM_UP = 3;
const RESOURCES = { cpus: 1, memoryMb: 512, maxProcesses: 128, diskMb: 1024 };

const work = mkdtempSync('/var/tmp/airlock-bench-files-');
const rootfsDir = join(work, 'rootfs');
await buildBusyboxRootfs(rootfsDir);
const stateRoot = join(work, 'state');
const disks = new LoopDisks({ root: join(work, 'disks') });
const driver = new GvisorDriver({ stateRoot });
await driver.checkHost();

/** `runsc exec` with `input` on stdin, to its end. */
function runscExec(containerId: string, argv: string[], input?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/runsc', [`--root=${join(stateRoot, 'runsc')}`, 'exec', containerId, ...argv], { stdio: ['pipe', 'pipe', 'ignore'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`runsc exec exited ${code}`))));
    child.stdin.end(input);
  });
}

function cells(values: number[]): string {
  return `${quantile(values, 0.5).toFixed(1)} | ${quantile(values, 0.99).toFixed(1)}`;
}

const sessionId = 'bench-files';
const diskDir = await disks.create(sessionId, RESOURCES.diskMb);
const sandboxId = `files-${process.pid}`;
const containerId = `airlock-${sandboxId}`;
let handle: SandboxHandle | undefined;
try {
  handle = await driver.start({ sandboxId, sessionId, rootfs: { kind: 'directory' as const, path: rootfsDir }, disk: { kind: 'directory' as const, path: diskDir }, stateDir: join(stateRoot, 'sandboxes', sandboxId), hostname: 'files', resources: RESOURCES, env: {} });
  const machine = handle;
  const agents = (driver as unknown as { agents: { connectionOf(handle: SandboxHandle): Promise<AgentConnection> } }).agents;
  const connection = await agents.connectionOf(machine);
  const rows = new Map<string, number[]>();
  const add = (name: string, value: number): void => void (rows.get(name) ?? rows.set(name, []).get(name))?.push(value);
  for (const size of [4, 64]) {
    const content = Buffer.alloc(size * 1024, 0x61);
    for (let i = 0; i < WARM_UP + samples; i++) {
      const path = `/workspace/bench-${size}`;
      const write = await timed(() => driver.files.write(machine, path, content, { createParents: false, symlinks: 'refuse' }));
      const read = await timed(async () => {
        const got = await driver.files.read(machine, path, { maxBytes: content.length, symlinks: 'refuse' });
        if (got.content.length !== content.length) throw new Error('short read');
      });
      const ping = await timed(() => connection.ping(5_000));
      const oldWrite = await timed(() => runscExec(containerId, ['sh', '-c', `cat > /tmp/bench-${size}`], content));
      const oldRead = await timed(() => runscExec(containerId, ['cat', `/tmp/bench-${size}`]));
      if (i < WARM_UP) continue;
      add(`write ${size} KiB`, write);
      add(`read ${size} KiB`, read);
      add(`write + read ${size} KiB`, write + read);
      add(`floor: the agent channel (PING) [${size}]`, ping);
      add(`runsc exec write + read ${size} KiB`, oldWrite + oldRead);
    }
  }
  const lines = [`### Files: ${samples} samples each, through the driver (the agent), interleaved (after ${WARM_UP} warm-up rounds)`, '', '| what | p50 (ms) | p99 (ms) |', '|---|---|---|'];
  for (const [name, values] of rows) lines.push(`| ${name} | ${cells(values)} |`);
  const both = rows.get('write + read 4 KiB') ?? [];
  const old = rows.get('runsc exec write + read 4 KiB') ?? [];
  lines.push('', `write + read 4 KiB: ${quantile(both, 0.5).toFixed(1)} ms p50, ${(quantile(old, 0.5) / quantile(both, 0.5)).toFixed(1)}× faster than two \`runsc exec\`s.`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
} finally {
  if (handle) await driver.destroy(handle).catch((error: unknown) => process.stderr.write(`destroy: ${String(error)}\n`));
  await disks.destroy(sessionId).catch((error: unknown) => process.stderr.write(`disk: ${String(error)}\n`));
  if ((await mountsUnder(work)).length === 0) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`mounts left under ${work}; not removed\n`);
}
