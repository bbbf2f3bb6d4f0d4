/**
 * A tool call parked until a human decides. The call is stored whole, so that
 * an approval survives a restart of the server and runs exactly once.
 */
import type { ToolCall } from './tool-call.js';

/** pending → approved → executed, or pending → denied | expired. */
export type ApprovalState = 'pending' | 'approved' | 'denied' | 'expired' | 'executed';

/** An approval request, as stored. */
export interface ApprovalRecord {
  id: string;
  sessionId: string;
  state: ApprovalState;
  call: ToolCall;
  /** the decision that asked for approval */
  policyIds: string[];
  reason: string;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  decidedBy: string | null;
  decisionReason: string | null;
}
