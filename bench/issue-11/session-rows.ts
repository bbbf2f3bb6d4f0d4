/**
 * Rows 1–4 of issue 11's Targets: create → first output, exec `true`, 4 KiB
 * write + read, and waking a paused session, each through the SDK and HTTP,
 * interleaved sample by sample with its floor on the server's own driver
 * (the agent, no pipeline, no HTTP) on an already running sandbox.
 */
import { Sandbox } from '@airlock/sdk';
import type { SandboxHandle } from '../../packages/runtime/src/core/sandbox-driver.js';
import { RawRunsc } from '../runsc-floor.js';
import { quantile, timed } from '../stats.js';
import { AWAKE_CONTRACT, handleOf, poolStatus, waitForWarmPool, type BenchContext } from './bench-context.js';
import { figure, measureRow, type RowResult } from './row-result.js';

const EXEC_TRUE = { argv: ['true'], cwd: '/workspace', env: {}, timeoutMs: 30_000 };
const SMALL = Buffer.alloc(4096, 0x61);

/** Runs the rows of this file that `wanted` accepts, on one reference session, and kills it. */
export async function sessionRows(context: BenchContext, wanted: (id: string) => boolean): Promise<RowResult[]> {
  const rows: RowResult[] = [];
  const reference = await Sandbox.create({ ...context.connection, contract: AWAKE_CONTRACT });
  try {
    await reference.commands.run(['true']);
    const handle = await handleOf(context, reference);
    if (wanted('create')) rows.push(await createRow(context, handle));
    if (wanted('exec')) rows.push(await execRow(context, reference, handle));
    if (wanted('files')) rows.push(await filesRow(context, reference, handle));
    if (wanted('wake')) rows.push(await wakeRow(context, reference));
  } finally {
    await reference.kill().catch(() => undefined);
  }
  return rows;
}

function createRow(context: BenchContext, handle: SandboxHandle): Promise<RowResult> {
  const target = '≤ 50 ms p50, p99 ≤ 120 ms';
  return measureRow('create', 'create → first command output (SDK)', target, async () => {
    const airlock: number[] = [];
    const warm: number[] = [];
    const cold: number[] = [];
    for (let i = 0; i < context.options.samples; i += 1) {
      await waitForWarmPool(context);
      let sandbox: Sandbox | undefined;
      airlock.push(await timed(async () => {
        sandbox = await Sandbox.create(context.connection);
        await sandbox.commands.run('echo ready');
      }));
      await sandbox?.kill();
      warm.push(await timed(() => context.driver.exec(handle, EXEC_TRUE)));
      const raw = new RawRunsc(context.work, context.rootfsDir, `create-${i}`);
      try {
        cold.push(await timed(() => {
          raw.start();
          raw.exec(['echo', 'ready']);
        }));
      } finally {
        raw.destroy();
      }
    }
    const result = figure('Airlock', airlock);
    const pool = await poolStatus(context);
    const claims = pool ? pool.classes.reduce((total, entry) => total + entry.claims, 0) : 0;
    const misses = pool ? pool.classes.reduce((total, entry) => total + entry.misses, 0) : 0;
    return {
      operation: 'create → first command output (SDK)',
      target,
      unit: 'ms',
      airlock: result,
      floor: figure('warm floor: agent `exec true` on the driver of a running sandbox', warm),
      otherFloors: [figure('cold floor: `runsc run` of the same rootfs → first output', cold)],
      met: result.p50 <= 50 && result.p99 <= 120,
      notes: [
        pool ? `warm pool of ${pool.size}: ${claims} claims, ${misses} misses over the whole run so far (GET /v1/warm-pool)` : `warm pool asked: ${context.options.warmPool}; this server has none (no GET /v1/warm-pool)`,
        'each create is killed outside the clock; the harness waits for the pool to refill between creates',
      ],
      details: { warmPool: pool ?? null },
    };
  });
}

function execRow(context: BenchContext, sandbox: Sandbox, handle: SandboxHandle): Promise<RowResult> {
  const target = '≤ 20 ms p50, ≤ 1.3× the agent floor';
  return measureRow('exec', 'exec `true` round trip (SDK, HTTP)', target, async () => {
    const airlock: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < context.options.samples; i += 1) {
      airlock.push(await timed(() => sandbox.commands.run(['true'])));
      floor.push(await timed(() => context.driver.exec(handle, EXEC_TRUE)));
    }
    const ratio = quantile(airlock, 0.5) / quantile(floor, 0.5);
    return {
      operation: 'exec `true` round trip (SDK, HTTP)',
      target,
      unit: 'ms',
      airlock: figure('Airlock', airlock),
      floor: figure('agent floor: `exec true` on the driver, same sandbox, interleaved', floor),
      otherFloors: [],
      met: quantile(airlock, 0.5) <= 20 && ratio <= 1.3,
      notes: [],
      details: {},
    };
  });
}

function filesRow(context: BenchContext, sandbox: Sandbox, handle: SandboxHandle): Promise<RowResult> {
  const target = '≤ 6 ms for both';
  return measureRow('files', 'file write + read 4 KiB (SDK)', target, async () => {
    const airlock: number[] = [];
    const floor: number[] = [];
    const text = SMALL.toString();
    for (let i = 0; i < context.options.samples; i += 1) {
      airlock.push(await timed(async () => {
        await sandbox.files.write('/workspace/bench-4k', text);
        await sandbox.files.read('/workspace/bench-4k');
      }));
      floor.push(await timed(async () => {
        await context.driver.files.write(handle, '/workspace/bench-4k-floor', SMALL, { createParents: false, symlinks: 'refuse' });
        const got = await context.driver.files.read(handle, '/workspace/bench-4k-floor', { maxBytes: SMALL.length, symlinks: 'refuse' });
        if (got.content.length !== SMALL.length) throw new Error('short read on the driver');
      }));
    }
    return {
      operation: 'file write + read 4 KiB (SDK)',
      target,
      unit: 'ms',
      airlock: figure('Airlock', airlock),
      floor: figure("floor: the same write + read on the driver's files (the agent)", floor),
      otherFloors: [],
      met: quantile(airlock, 0.5) <= 6,
      notes: [],
      details: {},
    };
  });
}

/**
 * The floor pauses and wakes, on the driver, the sandbox of a second session, so that the measured
 * session's state stays what its server made it.
 */
function wakeRow(context: BenchContext, sandbox: Sandbox): Promise<RowResult> {
  const target = '≤ 40 ms p50';
  return measureRow('wake', 'wake a paused session → first output', target, async () => {
    const other = await Sandbox.create({ ...context.connection, contract: AWAKE_CONTRACT });
    try {
      await other.commands.run(['true']);
      const otherHandle = await handleOf(context, other);
      const airlock: number[] = [];
      const floor: number[] = [];
      for (let i = 0; i < context.options.samples; i += 1) {
        await sandbox.pause();
        airlock.push(await timed(() => sandbox.commands.run(['true'])));
        await context.driver.pause(otherHandle);
        floor.push(await timed(async () => {
          await context.driver.unpause(otherHandle);
          await context.driver.exec(otherHandle, EXEC_TRUE);
        }));
      }
      return {
        operation: 'wake a paused session → first output',
        target,
        unit: 'ms',
        airlock: figure('Airlock', airlock),
        floor: figure('floor: driver unpause + agent `exec true` (runsc resume + agent reply)', floor),
        otherFloors: [],
        met: quantile(airlock, 0.5) <= 40,
        notes: ['paused through the SDK (outside the clock); the clock covers the call that wakes it'],
        details: {},
      };
    } finally {
      await other.kill().catch(() => undefined);
    }
  });
}
