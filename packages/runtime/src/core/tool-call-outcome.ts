/**
 * What a tool call comes to, as a value: completed with its result, refused
 * with a stable error (denied, over budget, held and then denied…), or
 * waiting for a human. Shared by the pipeline and the approval service,
 * which therefore need not import each other.
 */
import type { PolicyDecision } from './authorizer.js';
import type { ToolName } from './tool-call.js';

/** Timing of a call, in milliseconds. */
export interface CallTiming {
  /** from receipt to the start of execution: validation, policy, waiting for the session */
  queuedMs: number;
  /** waking the session from sleep, when it slept */
  resumeMs: number;
  /** getting the command going: a per-call sandbox's boot, or an exec's setup on the machine */
  startMs: number;
  /** the command's own run time */
  runMs: number;
  totalMs: number;
}

/** The outcome of a tool call, as a value. */
export type ToolCallOutcome =
  | { status: 'completed'; callId: string; tool: ToolName; result: Record<string, unknown>; decision: PolicyDecision; timing: CallTiming }
  | {
      status: 'refused';
      callId: string;
      tool: ToolName;
      error: { code: string; message: string; details: Record<string, unknown> };
      decision: PolicyDecision | null;
    }
  | { status: 'pending-approval'; callId: string; tool: ToolName; approvalId: string; decision: PolicyDecision };
