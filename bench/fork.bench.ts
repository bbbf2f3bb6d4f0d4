/**
 * Issue 4's figures: fork of a running session into N = 1, 4, 16 branches
 * through the SDK against a real server (snapshot included; wall time until
 * every branch has answered a command), with each branch's host memory (RSS
 * and PSS of its sandbox processes) and disk; beside N plain `runsc restore`
 * of a checkpoint of the same image holding the same memory, in the same run.
 * Usage: npx tsx bench/fork.bench.ts [counts, default 1,4,16]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, openDataDir, openImageCatalog } from '@airlock/runtime';
import { ForkError, Sandbox } from '@airlock/sdk';
import { FloorFork, hostMemory } from './fork-floor.js';
import { holdMemoryScript, startHolderCommand } from './memory-holder.js';
import { timed } from './stats.js';

const counts = (process.argv[2] ?? '1,4,16').split(',').map(Number);
const work = mkdtempSync('/var/tmp/airlock-bench-fork-');
// The state every branch inherits: a Python process holding 64 MB.
const HOLD = holdMemoryScript(64);
const MB = 1024 * 1024;

const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench', maxForkBranches: 64 });
const connection = { url: server.url, token: 'bench' };
const image = await openImageCatalog(openDataDir(join(work, 'data'))).get('debian-bookworm');
const floor = new FloorFork(work, image.rootfsDir, HOLD);
const lines = [
  '| N | Airlock fork → all answered (ms) | of which the fork call (ms) | per branch (ms) | parent paused (ms) | branch RSS / PSS (MiB) | branch disk (MiB) | snapshot (MiB) | runsc restore ×N → all answered (ms) | floor RSS / PSS (MiB) | ratio |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
];
let parent: Sandbox | undefined;
try {
  parent = await Sandbox.create(connection);
  await parent.files.write('/workspace/hold.py', HOLD);
  await parent.commands.run(startHolderCommand('/workspace/hold.py'));
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
