/**
 * Rows 8–9 of issue 11's Targets: what per-call mode adds to a call, and the
 * agent-trace replay's compute held per-call against a machine that never
 * sleeps (bench/agent-trace-replay.ts).
 */
import { Sandbox } from '@airlock/sdk';
import { replay, trace } from '../agent-trace-replay.js';
import { RawRunsc } from '../runsc-floor.js';
import { quantile, timed } from '../stats.js';
import { AWAKE_CONTRACT, handleOf, type BenchContext } from './bench-context.js';
import { figure, measureRow, type RowResult } from './row-result.js';

const EXEC_TRUE = { argv: ['true'], cwd: '/workspace', env: {}, timeoutMs: 30_000 };
/** Time compression of the replay, as in bench/agent-trace.bench.ts: think ×0.08, calls ×0.2. */
const THINK_SCALE = 0.08;
const CALL_SCALE = 0.2;

/** Runs the rows of this file that `wanted` accepts. */
export async function perCallRows(context: BenchContext, wanted: (id: string) => boolean): Promise<RowResult[]> {
  const rows: RowResult[] = [];
  if (wanted('per-call')) rows.push(await addedRow(context));
  if (wanted('trace')) rows.push(await traceRow(context));
  return rows;
}

/**
 * Added latency = a per-call session's `exec true` minus a machine session's, paired and
 * interleaved. Its floor is the same difference without Airlock: a fresh `runsc run` of the same
 * rootfs to first output minus an agent `exec true` on the driver of a running sandbox.
 */
function addedRow(context: BenchContext): Promise<RowResult> {
  const target = '≤ 60 ms added per call';
  return measureRow('per-call', 'per-call mode: added latency per call', target, async () => {
    const perCall = await Sandbox.create({ ...context.connection, mode: 'per-call' });
    const machine = await Sandbox.create({ ...context.connection, contract: AWAKE_CONTRACT });
    try {
      await machine.commands.run(['true']);
      const handle = await handleOf(context, machine);
      const perCallMs: number[] = [];
      const machineMs: number[] = [];
      const coldMs: number[] = [];
      const warmMs: number[] = [];
      for (let i = 0; i < context.options.samples; i += 1) {
        perCallMs.push(await timed(() => perCall.commands.run(['true'])));
        machineMs.push(await timed(() => machine.commands.run(['true'])));
        const raw = new RawRunsc(context.work, context.rootfsDir, `per-call-${i}`);
        try {
          coldMs.push(await timed(() => {
            raw.start();
            raw.exec(['true']);
          }));
        } finally {
          raw.destroy();
        }
        warmMs.push(await timed(() => context.driver.exec(handle, EXEC_TRUE)));
      }
      const added = perCallMs.map((value, index) => value - (machineMs[index] ?? Number.NaN));
      const floorAdded = coldMs.map((value, index) => value - (warmMs[index] ?? Number.NaN));
      return {
        operation: 'per-call mode: added latency per call',
        target,
        unit: 'ms',
        airlock: figure('Airlock', added),
        floor: figure('floor: fresh `runsc run` → first output minus agent `exec true` on a running sandbox (paired)', floorAdded),
        otherFloors: [],
        met: quantile(added, 0.5) <= 60,
        notes: [`added = per-call session \`exec true\` minus machine session \`exec true\` (SDK, paired, interleaved); per-call p50 ${quantile(perCallMs, 0.5).toFixed(1)} ms, machine p50 ${quantile(machineMs, 0.5).toFixed(1)} ms`],
        details: { perCallMs, machineMs, coldRunMs: coldMs, warmExecMs: warmMs },
      };
    } finally {
      await perCall.kill().catch(() => undefined);
      await machine.kill().catch(() => undefined);
    }
  });
}

/**
 * Compute held per-call ÷ compute held by a machine that never sleeps, over the same compressed
 * trace. Its floor: the trace's own call time ÷ the same machine's, what a sandbox that existed
 * only while a call ran would hold.
 */
function traceRow(context: BenchContext): Promise<RowResult> {
  const target = '≤ 0.3× at ≤ 60 ms p50 added per call';
  return measureRow('trace', 'agent-trace replay: per-call compute held vs always-on', target, async () => {
    const steps = trace(context.options.traceCalls, THINK_SCALE, CALL_SCALE);
    const always = await replay('(a) machine, never sleeps', steps, () => Sandbox.create({ ...context.connection, contract: AWAKE_CONTRACT }));
    const perCall = await replay('(c) per-call sandboxes', steps, () => Sandbox.create({ ...context.connection, mode: 'per-call' }));
    const ratio = perCall.heldSeconds / always.heldSeconds;
    const callSeconds = steps.reduce((total, step) => total + step.callSeconds, 0);
    const added = quantile(perCall.added, 0.5) - quantile(always.added, 0.5);
    return {
      operation: 'agent-trace replay: per-call compute held vs always-on',
      target,
      unit: '×',
      airlock: figure('Airlock', [ratio]),
      floor: figure("floor: the trace's call time ÷ the always-on machine's held time", [callSeconds / always.heldSeconds]),
      otherFloors: [],
      met: ratio <= 0.3 && added <= 60,
      notes: [
        `${steps.length} calls, time compressed (think ×${THINK_SCALE}, calls ×${CALL_SCALE}); compute-s held: per-call ${perCall.heldSeconds.toFixed(1)}, always-on ${always.heldSeconds.toFixed(1)}; calls ran ${callSeconds.toFixed(1)} s`,
        `added per call (client time minus the call's own run time), p50: per-call ${quantile(perCall.added, 0.5).toFixed(0)} ms, always-on ${quantile(always.added, 0.5).toFixed(0)} ms, difference ${added.toFixed(0)} ms (judged against the 60 ms)`,
      ],
      details: { always, perCall, callSeconds },
    };
  });
}
