/**
 * Row 7 of issue 11's Targets: fork a running session holding 64 MB into 16
 * branches through the SDK (snapshot included) until every branch has
 * answered a command, with each branch's memory from its cgroup; beside 16
 * `runsc restore`s of a checkpoint of the same rootfs holding the same
 * memory, at the fork service's parallelism (bench/fork-floor.ts).
 */
import { join } from 'node:path';
import { ForkError, Sandbox } from '@airlock/sdk';
import { FloorFork } from '../fork-floor.js';
import { holdMemoryScript, startHolderCommand } from '../memory-holder.js';
import { quantile, timed } from '../stats.js';
import { handleOf, type BenchContext } from './bench-context.js';
import { figure, measureRow, type RowResult } from './row-result.js';

const BRANCHES = 16;
const HELD_MB = 64;
/** The fork service's default: branches restored 4 at a time (core/fork-service.ts). */
const PARALLELISM = 4;
const MIB = 2 ** 20;

/** Fork of 16, `forkRounds` times, each round followed by the floor's 16 restores. */
export function forkRow(context: BenchContext): Promise<RowResult> {
  const target = '≤ 1.5 s, per branch memory reported';
  return measureRow('fork', `fork ${BRANCHES} branches → all answered a command`, target, async () => {
    const script = holdMemoryScript(HELD_MB);
    const parent = await Sandbox.create(context.connection);
    const floor = new FloorFork(context.work, context.rootfsDir, script, PARALLELISM);
    try {
      await parent.files.write('/workspace/hold.py', script);
      await parent.commands.run(startHolderCommand('/workspace/hold.py'));
      const floorImage = join(context.work, 'floor-fork-image');
      floor.template(floorImage);
      const airlock: number[] = [];
      const forkCall: number[] = [];
      const floorMs: number[] = [];
      const branchMemory: number[] = [];
      const floorMemory: number[] = [];
      for (let round = 0; round < context.options.forkRounds; round += 1) {
        let branches: Sandbox[] = [];
        airlock.push(await timed(async () => {
          forkCall.push(await timed(async () => {
            try {
              branches = await parent.fork({ count: BRANCHES });
            } catch (error) {
              await Promise.all((error instanceof ForkError ? (error as ForkError<Sandbox>).created : []).map((branch) => branch.kill().catch(() => undefined)));
              throw error;
            }
          }));
          await Promise.all(branches.map((branch) => branch.commands.run(['true'])));
        }));
        for (const branch of branches) branchMemory.push((await context.driver.usage(await handleOf(context, branch))).memoryBytes);
        await Promise.all(branches.map((branch) => branch.kill()));
        for (const snapshot of await parent.snapshots.list()) await parent.snapshots.remove(snapshot.id);
        try {
          let ids: string[] = [];
          floorMs.push(await timed(async () => {
            ids = await floor.restore(floorImage, BRANCHES);
          }));
          floorMemory.push(...ids.map((id) => floor.cgroupMemory(id)));
        } finally {
          floor.destroyAll();
        }
      }
      const mib = (bytes: number[]) => Math.round(quantile(bytes, 0.5) / MIB);
      return {
        operation: `fork ${BRANCHES} branches → all answered a command`,
        target,
        unit: 'ms',
        airlock: figure('Airlock', airlock),
        floor: figure(`floor: ${BRANCHES} \`runsc restore\` + \`runsc exec true\`, ${PARALLELISM} at a time`, floorMs),
        otherFloors: [],
        met: quantile(airlock, 0.5) <= 1500,
        notes: [`parent holds ${HELD_MB} MiB (Python); per branch memory (cgroup memory.usage_in_bytes, p50): Airlock ${mib(branchMemory)} MiB, floor ${mib(floorMemory)} MiB; of the Airlock time the fork call took ${quantile(forkCall, 0.5).toFixed(0)} ms p50`],
        details: { branchMemoryBytes: branchMemory, floorBranchMemoryBytes: floorMemory, forkCallMs: forkCall },
      };
    } finally {
      floor.destroyAll();
      await parent.kill().catch(() => undefined);
    }
  });
}
