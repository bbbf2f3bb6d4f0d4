/**
 * Issue 5's benchmark: replays one recorded-shape agent trace (tool calls
 * separated by model turns) against (a) a session machine that never
 * sleeps, (b) a session machine that pauses and suspends when idle, and
 * (c) per-call mode, through the SDK against a real server on gVisor.
 *
 * The trace is drawn from lognormal distributions with the medians measured
 * on real coding-agent sessions (tool call 0.5 s, model turn 2.7 s) and long
 * tails. Time is compressed so the three replays fit in about ten minutes:
 * think times and call durations are scaled (printed with the results), and
 * (b)'s idle timeouts are given in the compressed time.
 *
 * Usage: npx tsx bench/agent-trace.bench.ts [calls=200] [thinkScale=0.08] [callScale=0.2] [--model-only]
 * (`--model-only` prints the trace and what sleeping would save at real time, without replaying.)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import { CALL, THINK, replay, trace as seededTrace, type ModeResult, type Step } from './agent-trace-replay.js';
import { quantile } from './stats.js';

const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const modelOnly = process.argv.includes('--model-only');
const calls = Number.parseInt(positional[0] ?? '200', 10);
const thinkScale = Number.parseFloat(positional[1] ?? '0.08');
const callScale = Number.parseFloat(positional[2] ?? '0.2');
const trace = (count: number): Step[] => seededTrace(count, thinkScale, callScale);
/** (b)'s idle timeouts, in compressed seconds (the contract takes whole seconds). */
const SLEEPY = { pauseAfterSeconds: 1, suspendAfterSeconds: 2 };
/**
 * Memory of every session. Roomy on purpose: the gVisor sentry's host memory grows by ~1 MB per
 * exec and is carried across checkpoints (see bench/README.md), and 200 calls at the 512 MB
 * default ended in an OOM kill of the sleeping machine.
 */
const RESOURCES = { memoryMb: 2048 };

/**
 * Where the time of the same trace goes at real time (no compression), with (b)'s timeouts
 * scaled back up, counting only the timeouts (no transition costs): the share of session time
 * running, paused and suspended.
 */
function realTimeModel(steps: Step[]): string {
  const pause = SLEEPY.pauseAfterSeconds / thinkScale;
  const suspend = SLEEPY.suspendAfterSeconds / thinkScale;
  let running = 0;
  let paused = 0;
  let suspended = 0;
  for (const step of steps) {
    const think = step.thinkSeconds / thinkScale;
    running += step.callSeconds / callScale + Math.min(think, pause);
    paused += Math.max(0, Math.min(think, suspend) - pause);
    suspended += Math.max(0, think - suspend);
  }
  const total = running + paused + suspended;
  const share = (value: number) => `${((100 * value) / total).toFixed(1)}%`;
  return `At real time the same trace lasts ${(total / 60).toFixed(1)} min; with pause after ${pause.toFixed(1)} s and suspend after ${suspend.toFixed(1)} s a sleeping machine would be running ${share(running)}, paused ${share(paused)}, suspended ${share(suspended)} of it (timeouts only, no transition costs).`;
}

function row(result: ModeResult): string {
  const ms = (value: number) => value.toFixed(0);
  return `| ${result.mode} | ${result.heldSeconds.toFixed(1)} | ${result.unpausedSeconds.toFixed(1)} | ${ms(quantile(result.added, 0.5))} | ${ms(quantile(result.added, 0.99))} | ${result.wallSeconds.toFixed(1)} | ${result.wakes.unpaused} / ${result.wakes.restored} |`;
}

// The image the tests build is shared through this directory; a data dir of its own would need a build.
if (!process.env['AIRLOCK_IMAGES_DIR'] && existsSync('/var/tmp/airlock-test/images')) process.env['AIRLOCK_IMAGES_DIR'] = '/var/tmp/airlock-test/images';
if (modelOnly) {
  process.stdout.write(`${realTimeModel(trace(calls))}\n`);
  process.exit(0);
}
// Short: a per-call sandbox's agent socket path under the data dir must stay under 108 bytes.
const work = mkdtempSync('/var/tmp/abtr-');
const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench' });
const connection = { url: server.url, token: 'bench' };
try {
  const steps = trace(calls);
  const sum = (pick: (step: Step) => number) => steps.reduce((total, step) => total + pick(step), 0);
  const quantileOf = (pick: (step: Step) => number, q: number) => quantile(steps.map(pick), q);
  const results: ModeResult[] = [];
  results.push(await replay('(a) machine, never sleeps', steps, () => Sandbox.create({ ...connection, contract: { version: 1, resources: RESOURCES, idle: { suspendAfterSeconds: 300, keepAwake: true } } })));
  results.push(await replay('(b) machine, sleeps when idle', steps, () => Sandbox.create({ ...connection, contract: { version: 1, resources: RESOURCES, idle: SLEEPY } })));
  results.push(await replay('(c) per-call sandboxes', steps, () => Sandbox.create({ ...connection, mode: 'per-call', contract: { version: 1, resources: RESOURCES } })));
  const lines = [
    `### Agent trace replay: ${calls} calls`,
    '',
    `Trace: tool-call durations lognormal (median ${CALL.median} s, σ ${CALL.sigma}), model turns lognormal (median ${THINK.median} s, σ ${THINK.sigma}), seeded.`,
    `**Time compressed**: think times ×${thinkScale}, call durations ×${callScale}. In the replay: call median ${quantileOf((s) => s.callSeconds, 0.5).toFixed(2)} s (p99 ${quantileOf((s) => s.callSeconds, 0.99).toFixed(2)} s, total ${sum((s) => s.callSeconds).toFixed(1)} s), think median ${quantileOf((s) => s.thinkSeconds, 0.5).toFixed(2)} s (p99 ${quantileOf((s) => s.thinkSeconds, 0.99).toFixed(2)} s, total ${sum((s) => s.thinkSeconds).toFixed(1)} s).`,
    `(b) pauses after ${SLEEPY.pauseAfterSeconds} s and suspends after ${SLEEPY.suspendAfterSeconds} s of idleness in compressed time (${(SLEEPY.pauseAfterSeconds / thinkScale).toFixed(1)} s and ${(SLEEPY.suspendAfterSeconds / thinkScale).toFixed(1)} s of real think time).`,
    '',
    '| mode | compute-s held (sandbox existed) | compute-s unpaused | added latency p50 (ms) | added latency p99 (ms) | wall (s) | wakes from pause / suspend |',
    '|---|---|---|---|---|---|---|',
    ...results.map(row),
    '',
    'Added latency: client-observed time of a call minus the command\'s own run time (the `sleep` it ran). Compute-seconds: for machines, the session\'s running (+ paused) seconds from its meters over the whole replay; for per-call, the summed lifetime of the per-call sandboxes (`perCallSeconds`).',
  ];
  lines.push(realTimeModel(steps));
  const resumed = results[1]?.resumes.filter((value) => value > 0) ?? [];
  if (resumed.length > 0) lines.push(`(b) wake-ups seen by callers: ${resumed.length}, resumeMs p50 ${quantile(resumed, 0.5).toFixed(0)} ms, max ${Math.max(...resumed).toFixed(0)} ms.`);
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  // Even after a failure: no sandbox, mount or loop device may outlive the run.
  for (const session of await Sandbox.list(connection).catch(() => [])) {
    if (session.state !== 'terminated') await (await Sandbox.connect(session.id, connection)).kill().catch(() => undefined);
  }
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
