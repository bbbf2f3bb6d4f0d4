/**
 * Tool calls through the airlock from the console: the same route every
 * agent uses (`POST /v1/sessions/:id/tools/:tool`), so each one is
 * authorized by the session's policy, can be held, and is audited.
 */
import { api, ApiError, sessionPath } from './api-client';
import type { ToolCallOutcome } from './api-types';

/** The result of a completed call; a held call becomes an error naming its approval. */
export async function callTool<T extends Record<string, unknown>>(sessionId: string, tool: string, args: Record<string, unknown>): Promise<T> {
  const outcome = await api<ToolCallOutcome>('POST', sessionPath(sessionId, `/tools/${tool}`), args);
  if (outcome.status === 'completed') return outcome.result as T;
  if (outcome.status === 'pending-approval') {
    throw new ApiError('APPROVAL_PENDING', `the policy holds this ${tool} for a person: approval ${outcome.approvalId} is in the Approvals queue`, 202, { decision: outcome.decision });
  }
  throw new ApiError(outcome.error.code, outcome.error.message, 403, { ...outcome.error.details, decision: outcome.decision });
}
