/** Turns call outcomes into results or the matching error. */
import { errorFromBody, ApprovalPendingError, type AirlockApiError } from './errors.js';
import type { ToolCallOutcome } from './types.js';

/** The error a refused or still-pending outcome stands for. */
export function outcomeError(outcome: Exclude<ToolCallOutcome, { status: 'completed' }>): AirlockApiError {
  if (outcome.status === 'pending-approval') {
    return new ApprovalPendingError('APPROVAL_PENDING', `the call waits for a human: approve it with \`airlock approvals approve ${outcome.approvalId}\``, 202, {
      approvalId: outcome.approvalId,
      decision: outcome.decision,
      callId: outcome.callId,
    });
  }
  return errorFromBody(403, { error: { ...outcome.error, details: { ...outcome.error.details, decision: outcome.decision, callId: outcome.callId } } });
}

/** Decodes base64 to bytes without Node's Buffer. */
export function base64ToBytes(data: string): Uint8Array {
  const binary = atob(data);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

/** Encodes bytes as base64 without Node's Buffer. */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let index = 0; index < bytes.length; index += 0x8000) binary += String.fromCharCode(...bytes.subarray(index, index + 0x8000));
  return btoa(binary);
}
