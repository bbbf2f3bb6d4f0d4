/**
 * Guards that run before authorization: budgets from the contract (tool
 * calls, CPU seconds, wall seconds) and the runaway breaker (the same failing
 * call repeated N times trips it, until a human resets it).
 */
import { createHash } from 'node:crypto';
import { AirlockError } from './errors.js';
import { canonicalJson } from '../audit/hash-chain.js';
import type { GuardState, SessionRecord } from './session.js';
import type { ContractBudgets, SessionContract } from './session-contract.js';
import { secondsBetween } from './clock.js';

/** Budgets and breaker settings read from a contract. */
export interface GuardLimits {
  maxToolCalls?: number;
  maxCpuSeconds?: number;
  maxWallSeconds?: number;
  maxIdenticalFailures: number;
}

const MAX_TRACKED_KEYS = 64;

/** Reads the guard limits of a session's contract (contracts stored before a key existed lack it). */
export function guardLimitsOf(session: Pick<SessionRecord, 'contract'>): GuardLimits {
  const budgets: Partial<ContractBudgets> = session.contract.budgets ?? {};
  const guard: Partial<SessionContract['guard']> = session.contract.guard ?? {};
  const limits: GuardLimits = { maxIdenticalFailures: guard.maxIdenticalFailures ?? 20 };
  if (budgets.maxToolCalls !== undefined) limits.maxToolCalls = budgets.maxToolCalls;
  if (budgets.maxCpuSeconds !== undefined) limits.maxCpuSeconds = budgets.maxCpuSeconds;
  if (budgets.maxWallSeconds !== undefined) limits.maxWallSeconds = budgets.maxWallSeconds;
  return limits;
}

/** Identifies "the same call": tool plus canonical arguments. */
export function callKey(tool: string, args: unknown): string {
  return createHash('sha256').update(`${tool}\n${canonicalJson(args)}`).digest('hex').slice(0, 24);
}

/**
 * Why a call must not proceed (RUNAWAY_DETECTED or BUDGET_EXCEEDED), or
 * undefined. Counts `meters.toolCalls` as reserved: calls admitted and not
 * yet finished already hold their share, so N concurrent calls against a
 * budget of K admit exactly K.
 */
export function guardRefusal(session: SessionRecord, now: Date): AirlockError | undefined {
  const limits = guardLimitsOf(session);
  const tripped = session.guard.tripped;
  if (tripped) {
    return new AirlockError(
      'RUNAWAY_DETECTED',
      `the same call failed ${tripped.count} times in a row; calls are stopped until a human resets the breaker with \`airlock sessions reset-guard ${session.id}\``,
      { details: { sessionId: session.id, callKey: tripped.callKey, count: tripped.count, trippedAt: tripped.at } },
    );
  }
  const meters = session.meters;
  if (limits.maxToolCalls !== undefined && meters.toolCalls >= limits.maxToolCalls) {
    return budget(session, 'maxToolCalls', meters.toolCalls, limits.maxToolCalls, 'tool calls');
  }
  if (limits.maxCpuSeconds !== undefined && meters.cpuSeconds >= limits.maxCpuSeconds) {
    return budget(session, 'maxCpuSeconds', meters.cpuSeconds, limits.maxCpuSeconds, 'CPU seconds');
  }
  if (limits.maxWallSeconds !== undefined) {
    const running = meters.runningSeconds + (session.state === 'running' ? secondsBetween(session.stateSince, now) : 0);
    if (running >= limits.maxWallSeconds) return budget(session, 'maxWallSeconds', running, limits.maxWallSeconds, 'running seconds');
  }
  return undefined;
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
