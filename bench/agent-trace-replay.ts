/**
 * A recorded-shape agent trace (tool calls separated by model turns) and its
 * replay through the SDK: shared by bench/agent-trace.bench.ts and the
 * issue 11 harness. The trace is drawn from lognormal distributions with the
 * medians measured on real coding-agent sessions (tool call 0.5 s, model
 * turn 2.7 s) and long tails, seeded, and scaled to compress time.
 */
import type { Sandbox } from '@airlock/sdk';

/** Measured medians (seconds) of a tool call and the spread we give their tails. */
export const CALL = { median: 0.5, sigma: 1.1, cap: 60 };
/** Measured medians (seconds) of a model turn and the spread we give their tails. */
export const THINK = { median: 2.7, sigma: 1.2, cap: 300 };

/** One tool call and the model turn before it, in compressed seconds. */
export interface Step {
  callSeconds: number;
  thinkSeconds: number;
}

/** What one replay measured. */
export interface ModeResult {
  mode: string;
  wallSeconds: number;
  /** seconds a sandbox existed (machines: running + paused; per-call: summed per-call lifetimes) */
  heldSeconds: number;
  unpausedSeconds: number;
  /** per call: client-observed time minus the command's own run time (ms) */
  added: number[];
  resumes: number[];
  wakes: { unpaused: number; restored: number };
}

/** A small seeded PRNG (mulberry32), so every run replays the same trace. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function lognormal(next: () => number, median: number, sigma: number, cap: number): number {
  const z = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  return Math.min(cap, median * Math.exp(sigma * z));
}

/** The seeded trace of `count` steps, think times scaled by `thinkScale` and call durations by `callScale`. */
export function trace(count: number, thinkScale: number, callScale: number): Step[] {
  const next = random(20261129);
  return Array.from({ length: count }, () => ({
    callSeconds: lognormal(next, CALL.median, CALL.sigma, CALL.cap) * callScale,
    thinkSeconds: lognormal(next, THINK.median, THINK.sigma, THINK.cap) * thinkScale,
  }));
}

/** Replays `steps` on one new session (each call runs `sleep <its duration>`), then kills it. */
export async function replay(mode: string, steps: Step[], create: () => Promise<Sandbox>): Promise<ModeResult> {
  const sandbox = await create();
  await sandbox.commands.run(['true']);
  const added: number[] = [];
  const resumes: number[] = [];
  const started = performance.now();
  for (const [index, step] of steps.entries()) {
    await new Promise((resolve) => setTimeout(resolve, step.thinkSeconds * 1000));
    const before = performance.now();
    const result = await sandbox.commands.run(['sleep', step.callSeconds.toFixed(3)]);
    if (result.exitCode !== 0) throw new Error(`call ${index} failed: ${result.stderr}`);
    added.push(performance.now() - before - step.callSeconds * 1000);
    resumes.push(result.timing.resumeMs);
    if ((index + 1) % 50 === 0) process.stderr.write(`  ${mode}: ${index + 1}/${steps.length} calls\n`);
  }
  const wallSeconds = (performance.now() - started) / 1000;
  const info = await sandbox.getInfo();
  const types = (await sandbox.audit()).map((record) => record.type);
  await sandbox.kill();
  const meters = info.meters;
  const perCall = info.mode === 'per-call';
  return {
    mode,
    wallSeconds,
    heldSeconds: perCall ? (meters.perCallSeconds ?? 0) : meters.runningSeconds + meters.pausedSeconds,
    unpausedSeconds: perCall ? (meters.perCallSeconds ?? 0) : meters.runningSeconds,
    added,
    resumes,
    wakes: { unpaused: types.filter((type) => type === 'session.unpaused').length, restored: types.filter((type) => type === 'session.resumed').length },
  };
}
