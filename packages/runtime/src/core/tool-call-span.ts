/**
 * The spans of one tool call, by the OpenTelemetry GenAI conventions: an
 * `execute_tool {tool}` span (INTERNAL) from receipt to outcome, and its
 * child `apply_guardrail airlock` span carrying the policy's decision
 * (`gen_ai.security.decision.type`), the deciding policies and reason, and
 * for a held call the human who decided and how long it waited.
 */
import type { AirlockError } from './errors.js';
import type { ApprovalRecord } from './approval.js';
import type { PolicyDecision } from './authorizer.js';
import type { SpanAttributes, SpanRecord } from './tracer.js';
import type { ToolCallOutcome } from './tool-call-outcome.js';

/** The guardian's name on `apply_guardrail` spans (and in their name). */
export const GUARDIAN_NAME = 'airlock';

/** Instants of one call the pipeline notes for its spans (epoch milliseconds). */
export interface CallMarks {
  receivedMs: number;
  /** when admission returned: the policy's decision is taken */
  decidedMs?: number;
  /** the approval a held call waits on */
  approvalId?: string;
  /** that approval, as read when the call returned */
  approval?: ApprovalRecord;
}

/** The `execute_tool` span of one call, with its `apply_guardrail` child once a decision was taken. */
export function toolCallSpan(sessionId: string, tool: string, marks: CallMarks, endMs: number, outcome?: ToolCallOutcome, failure?: AirlockError): SpanRecord {
  const attributes: SpanAttributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    'gen_ai.tool.type': 'function',
    'gen_ai.conversation.id': sessionId,
    'airlock.session.id': sessionId,
  };
  if (outcome) {
    attributes['gen_ai.tool.call.id'] = outcome.callId;
    attributes['airlock.call.status'] = outcome.status;
    if (outcome.status === 'completed' && typeof outcome.result['exitCode'] === 'number') attributes['airlock.exit_code'] = outcome.result['exitCode'];
    if (outcome.status === 'refused') attributes['error.type'] = outcome.error.code;
    if (outcome.status === 'pending-approval') attributes['airlock.approval.id'] = outcome.approvalId;
  }
  if (failure) attributes['error.type'] = failure.code;
  const statusMessage = failure?.message ?? (outcome?.status === 'refused' ? outcome.error.message : undefined);
  const guardrail = outcome?.decision ? guardrailSpan(sessionId, outcome, outcome.decision, marks, endMs) : undefined;
  return {
    name: `execute_tool ${tool}`,
    kind: 'internal',
    startTimeMs: marks.receivedMs,
    endTimeMs: Math.max(endMs, marks.receivedMs),
    attributes,
    status: statusMessage === undefined ? 'ok' : 'error',
    ...(statusMessage === undefined ? {} : { statusMessage }),
    ...(guardrail ? { children: [guardrail] } : {}),
  };
}

/**
 * The guardrail's decision. A held call's span ends when a human decided
 * (approved: `allow`, denied or expired: `deny`) or, still waiting, when the
 * caller stopped waiting (`ask`, a value of ours: the conventions have no
 * word for "held for a human"); a log-only decision is `audit`.
 */
function guardrailSpan(sessionId: string, outcome: ToolCallOutcome, decision: PolicyDecision, marks: CallMarks, endMs: number): SpanRecord {
  const approval = marks.approval;
  let type: string = decision.decision;
  if (!decision.enforced) type = 'audit';
  else if (decision.decision === 'ask' && outcome.status !== 'pending-approval') {
    type = approval?.decidedBy && approval.state !== 'denied' ? 'allow' : 'deny';
  }
  const attributes: SpanAttributes = {
    'gen_ai.operation.name': 'apply_guardrail',
    'gen_ai.guardian.name': GUARDIAN_NAME,
    'gen_ai.security.target.type': 'tool_call',
    'gen_ai.security.target.id': outcome.callId,
    'gen_ai.security.decision.type': type,
    'gen_ai.conversation.id': sessionId,
    'airlock.policy.decision': decision.decision,
    'airlock.policy.enforced': decision.enforced,
  };
  if (decision.policyIds.length > 0) {
    attributes['gen_ai.security.policy.id'] = decision.policyIds.join(',');
    attributes['airlock.policy.ids'] = decision.policyIds;
  }
  if (decision.reason) attributes['gen_ai.security.decision.reason'] = decision.reason;
  const decidedMs = marks.decidedMs ?? endMs;
  let guardEndMs = decidedMs;
  if (decision.decision === 'ask' && approval) {
    attributes['airlock.approval.id'] = approval.id;
    attributes['airlock.approval.state'] = approval.state;
    if (approval.decidedBy) attributes['airlock.approval.decided_by'] = approval.decidedBy;
    const waitedUntil = approval.decidedAt ? Date.parse(approval.decidedAt) : endMs;
    attributes['airlock.approval.wait_ms'] = Math.max(0, waitedUntil - Date.parse(approval.createdAt));
    guardEndMs = Math.max(decidedMs, Math.min(waitedUntil, endMs));
  }
  // A deny is the guardian doing its job, not an error of its evaluation.
  return {
    name: `apply_guardrail ${GUARDIAN_NAME}`,
    kind: 'internal',
    startTimeMs: marks.receivedMs,
    endTimeMs: Math.max(guardEndMs, marks.receivedMs),
    attributes,
    status: 'ok',
  };
}
