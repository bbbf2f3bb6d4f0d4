/**
 * Guards that run before authorization: budgets from the contract (tool
 * calls, CPU seconds, wall seconds) and the runaway breaker (the same failing
 * call repeated N times trips it, until a human resets it).
 */
import { createHash } from 'node:crypto';
import { AirlockError } from './errors.js';
import { canonicalJson } from '../audit/hash-chain.js';
import type { GuardState, SessionRecord } from './session.js';
import { secondsBetween } from './clock.js';

/** Budgets and breaker settings read from a contract. */
export interface GuardLimits {
  maxToolCalls?: number;
  maxCpuSeconds?: number;
  maxWallSeconds?: number;
  maxIdenticalFailures: number;
}

const MAX_TRACKED_KEYS = 64;

/** Reads the guard limits of a session's contract. */
export function guardLimitsOf(session: SessionRecord): GuardLimits {
  const contract = session.contract as {
    budgets?: { maxToolCalls?: number; maxCpuSeconds?: number; maxWallSeconds?: number };
    guard?: { maxIdenticalFailures?: number };
  };
  const limits: GuardLimits = { maxIdenticalFailures: contract.guard?.maxIdenticalFailures ?? 20 };
  if (contract.budgets?.maxToolCalls !== undefined) limits.maxToolCalls = contract.budgets.maxToolCalls;
  if (contract.budgets?.maxCpuSeconds !== undefined) limits.maxCpuSeconds = contract.budgets.maxCpuSeconds;
  if (contract.budgets?.maxWallSeconds !== undefined) limits.maxWallSeconds = contract.budgets.maxWallSeconds;
  return limits;
}

/** Identifies "the same call": tool plus canonical arguments. */
export function callKey(tool: string, args: unknown): string {
  return createHash('sha256').update(`${tool}\n${canonicalJson(args)}`).digest('hex').slice(0, 24);
}

/** Throws RUNAWAY_DETECTED or BUDGET_EXCEEDED when the call must not proceed. */
export function checkGuards(session: SessionRecord, now: Date): void {
  const limits = guardLimitsOf(session);
  const tripped = session.guard.tripped;
  if (tripped) {
    throw new AirlockError(
      'RUNAWAY_DETECTED',
      `the same call failed ${tripped.count} times in a row; calls are stopped until a human resets the breaker with \`airlock sessions reset-guard ${session.id}\``,
      { details: { sessionId: session.id, callKey: tripped.callKey, count: tripped.count, trippedAt: tripped.at } },
    );
  }
  const meters = session.meters;
  if (limits.maxToolCalls !== undefined && meters.toolCalls >= limits.maxToolCalls) {
    throw budget(session, 'maxToolCalls', meters.toolCalls, limits.maxToolCalls, 'tool calls');
  }
  if (limits.maxCpuSeconds !== undefined && meters.cpuSeconds >= limits.maxCpuSeconds) {
    throw budget(session, 'maxCpuSeconds', meters.cpuSeconds, limits.maxCpuSeconds, 'CPU seconds');
  }
  if (limits.maxWallSeconds !== undefined) {
    const running = meters.runningSeconds + (session.state === 'running' ? secondsBetween(session.stateSince, now) : 0);
    if (running >= limits.maxWallSeconds) throw budget(session, 'maxWallSeconds', running, limits.maxWallSeconds, 'running seconds');
  }
}

function budget(session: SessionRecord, name: string, used: number, limit: number, unit: string): AirlockError {
  return new AirlockError(
    'BUDGET_EXCEEDED',
    `session ${session.id} used ${Math.round(used * 100) / 100} of its ${limit} ${unit} (budgets.${name}); create a new session with a larger budget`,
    { details: { sessionId: session.id, budget: name, used, limit } },
  );
}

/** The breaker after a call ended: failures of a key count up, a success of it resets it. */
export function recordOutcome(guard: GuardState, key: string, failed: boolean, limit: number, now: Date): GuardState {
  const failures = { ...guard.failures };
  if (!failed) {
    delete failures[key];
    return { ...guard, failures };
  }
  const count = (failures[key] ?? 0) + 1;
  delete failures[key];
  failures[key] = count;
  const keys = Object.keys(failures);
  for (const stale of keys.slice(0, Math.max(0, keys.length - MAX_TRACKED_KEYS))) delete failures[stale];
  const tripped = count >= limit ? { callKey: key, at: now.toISOString(), count } : guard.tripped;
  return { failures, tripped };
}
