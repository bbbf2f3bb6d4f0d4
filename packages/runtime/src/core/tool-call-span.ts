/**
 * The trace span of one tool call, named `execute_tool {tool}` with
 * OpenTelemetry GenAI attribute names, parented to the caller's trace.
 */
import { randomBytes } from 'node:crypto';
import type { AirlockError } from './errors.js';
import type { TraceContext, ToolCallSpan } from './tracer.js';
import type { ToolCallOutcome } from './tool-call-outcome.js';

/** The span of one call, with OpenTelemetry GenAI attribute names. */
export function toolCallSpan(
  sessionId: string,
  tool: string,
  trace: TraceContext | undefined,
  startedMs: number,
  outcome?: ToolCallOutcome,
  failure?: AirlockError,
): ToolCallSpan {
  const attributes: ToolCallSpan['attributes'] = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    'gen_ai.tool.type': 'function',
    'airlock.session.id': sessionId,
  };
  if (outcome) {
    attributes['gen_ai.tool.call.id'] = outcome.callId;
    attributes['airlock.call.status'] = outcome.status;
    if (outcome.decision) {
      attributes['airlock.decision'] = outcome.decision.decision;
      attributes['airlock.policy_ids'] = outcome.decision.policyIds;
      attributes['airlock.decision.enforced'] = outcome.decision.enforced;
    }
    if (outcome.status === 'completed' && typeof outcome.result['exitCode'] === 'number') attributes['airlock.exit_code'] = outcome.result['exitCode'];
    if (outcome.status === 'refused') attributes['error.type'] = outcome.error.code;
    if (outcome.status === 'pending-approval') attributes['airlock.approval.id'] = outcome.approvalId;
  }
  if (failure) attributes['error.type'] = failure.code;
  const errored = failure !== undefined || outcome?.status === 'refused';
  return {
    traceId: trace?.traceId ?? randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    ...(trace ? { parentSpanId: trace.parentSpanId } : {}),
    name: `execute_tool ${tool}`,
    startTimeMs: startedMs,
    endTimeMs: Date.now(),
    attributes,
    status: errored ? 'error' : 'ok',
    ...(failure ? { statusMessage: failure.message } : outcome?.status === 'refused' ? { statusMessage: outcome.error.message } : {}),
  };
}
