/**
 * A tool call parked until a human decides. The call is stored whole, so that
 * an approval survives a restart of the server and runs exactly once.
 */
import type { ToolCall } from './tool-call.js';

/** pending → approved → executed, or pending → denied | expired. */
export type ApprovalState = 'pending' | 'approved' | 'denied' | 'expired' | 'executed';

/**
 * A network connection of a sandbox held for approval (Cedar `net.connect`
 * answered "ask"), in the shape of a call so that lists and events show it
 * beside tool calls. Approving it lets connections to host:port through for
 * the rest of the session; nothing is executed.
 */
export interface ConnectionCall {
  id: string;
  sessionId: string;
  tool: 'net.connect';
  arguments: { host: string; port: number };
  receivedAt: string;
}

/** True when an approval holds a network connection rather than a tool call. */
export function isConnectionCall(call: ToolCall | ConnectionCall): call is ConnectionCall {
  return call.tool === 'net.connect';
}

/** An approval request, as stored. */
export interface ApprovalRecord {
  id: string;
  sessionId: string;
  state: ApprovalState;
  call: ToolCall | ConnectionCall;
  /** the decision that asked for approval */
  policyIds: string[];
  reason: string;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  decidedBy: string | null;
  decisionReason: string | null;
}
