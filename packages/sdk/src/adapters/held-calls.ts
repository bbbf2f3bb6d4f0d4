/**
 * How the framework adapters map Airlock's `ask` onto an agent framework's
 * own approval step. Airlock decides at call time, so the adapter submits
 * the call when the framework asks "does this need approval?": an allowed
 * call runs then (its result is kept for `execute`), a denied one is kept as
 * a refusal, and a held one answers "yes". When the framework's human
 * approves, `execute` approves the Airlock approval and waits for the result;
 * when they refuse, the adapter denies it in Airlock so nobody can approve
 * it later elsewhere. Shared by the Vercel AI SDK and OpenAI Agents adapters.
 */
import type { Sandbox } from '../sandbox.js';
import type { Connection } from '../connection.js';
import { AirlockApiError } from '../errors.js';
import { base64ToBytes } from '../outcome.js';
import type { ToolCallOutcome } from '../types.js';

/** Submits one call on the sandbox's session and returns its outcome at once, `pending-approval` included. */
export async function submitCall(sandbox: Sandbox, tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolCallOutcome> {
  // The Sandbox keeps its connection private; the adapters, in the same package, need calls that do not wait for a human.
  const connection = sandbox['connection'] as Connection;
  try {
    const response = await connection.send('POST', `/v1/sessions/${encodeURIComponent(sandbox.id)}/tools/${tool}`, args, signal ? { signal } : {});
    return (await response.json()) as ToolCallOutcome;
  } catch (error) {
    if (!(error instanceof AirlockApiError) || error.status >= 500) throw error;
    const decision = (error.details['decision'] ?? null) as Extract<ToolCallOutcome, { status: 'refused' }>['decision'];
    return { status: 'refused', callId: String(error.details['callId'] ?? ''), tool, error: { code: error.code, message: error.message, details: error.details }, decision };
  }
}

/** What a model reads about a refused call: the code, the message, the policy's reason and ids. */
export function refusalText(outcome: Extract<ToolCallOutcome, { status: 'refused' }>): string {
  const reason = outcome.decision?.reason;
  const policies = outcome.decision?.policyIds ?? [];
  return [
    `${outcome.error.code}: ${outcome.error.message}`,
    ...(reason && reason !== outcome.error.message ? [`policy reason: ${reason}`] : []),
    ...(policies.length > 0 ? [`policies: ${policies.join(', ')}`] : []),
    ...(outcome.error.code === 'POLICY_DENIED' ? ['Nothing ran; do not retry this call unchanged.'] : []),
  ].join('\n');
}

/** A text field of an exec result (the server sends binary output as base64). */
export function outputText(result: Record<string, unknown>, field: 'stdout' | 'stderr'): string {
  const data = String(result[field] ?? '');
  return result[`${field}Encoding`] === 'base64' ? new TextDecoder().decode(base64ToBytes(data)) : data;
}

/** The content of a files.read result as text (the server sends non-UTF-8 content as base64). */
export function fileText(result: Record<string, unknown>): string {
  const data = String(result['content'] ?? '');
  return result['encoding'] === 'base64' ? new TextDecoder().decode(base64ToBytes(data)) : data;
}

/** Options of the adapters' handling of held calls. */
export interface HeldCallOptions {
  /** recorded as the approver when the framework's human approves (default `agent-framework`) */
  decidedBy?: string;
  /** called when a call is held and nobody in the framework will be asked (e.g. a Shell), with its approval id */
  onApprovalRequired?: (approvalId: string) => void;
}

/** Calls submitted ahead of the framework's approval step, by the framework's call id. */
export class HeldCalls {
  private readonly submitted = new Map<string, ToolCallOutcome>();

  constructor(private readonly sandbox: Sandbox) {}

  /** Submits the call (once per call id); true when the policy holds it for a human. */
  async needsApproval(callId: string, tool: string, args: Record<string, unknown>): Promise<boolean> {
    let outcome = this.submitted.get(callId);
    if (!outcome) {
      outcome = await submitCall(this.sandbox, tool, args);
      this.submitted.set(callId, outcome);
    }
    return outcome.status === 'pending-approval';
  }

  /**
   * The call's final outcome. A call submitted by `needsApproval` is taken
   * from there (a held one is approved in Airlock first: the framework's human
   * said yes); otherwise it is submitted now and a held one waits for a human.
   */
  async outcome(callId: string | undefined, tool: string, args: Record<string, unknown>, options: HeldCallOptions & { signal?: AbortSignal } = {}): Promise<ToolCallOutcome> {
    const known = callId === undefined ? undefined : this.submitted.get(callId);
    if (callId !== undefined) this.submitted.delete(callId);
    const outcome = known ?? (await submitCall(this.sandbox, tool, args, options.signal));
    if (outcome.status !== 'pending-approval') return outcome;
    if (known) {
      await this.decide(outcome.approvalId, 'approve', options.decidedBy, 'approved in the agent framework');
    } else {
      options.onApprovalRequired?.(outcome.approvalId);
    }
    return this.sandbox.approvals.waitForOutcome(outcome.approvalId);
  }

  /** Denies in Airlock the held calls with these framework call ids (their human refused them). */
  async reject(callIds: Iterable<string>, options: { decidedBy?: string; reason?: string } = {}): Promise<void> {
    for (const callId of callIds) {
      const outcome = this.submitted.get(callId);
      if (outcome?.status !== 'pending-approval') continue;
      this.submitted.delete(callId);
      await this.decide(outcome.approvalId, 'deny', options.decidedBy, options.reason ?? 'refused in the agent framework');
    }
  }

  private async decide(approvalId: string, verdict: 'approve' | 'deny', decidedBy: string | undefined, reason: string): Promise<void> {
    const by = decidedBy ?? 'agent-framework';
    try {
      if (verdict === 'approve') await this.sandbox.approvals.approve(approvalId, { by, reason });
      else await this.sandbox.approvals.deny(approvalId, { by, reason });
    } catch (error) {
      // Someone decided first (CLI, API); the outcome says what happened.
      if (!(error instanceof AirlockApiError && error.code === 'APPROVAL_ALREADY_DECIDED')) throw error;
    }
  }
}

const registry = new WeakMap<Sandbox, HeldCalls>();

/** The held calls of a sandbox, shared by its adapters (one map, so a refusal helper finds them). */
export function heldCallsOf(sandbox: Sandbox): HeldCalls {
  let held = registry.get(sandbox);
  if (!held) {
    held = new HeldCalls(sandbox);
    registry.set(sandbox, held);
  }
  return held;
}
