/**
 * Human approval of network connections: when Cedar answers "ask" for
 * `net.connect` to host:port, the connection waits (up to a timeout) for a
 * human to decide, through the same approvals API and events as tool calls.
 * An approval covers host:port for the rest of the session; a denial too.
 */
import { isConnectionCall, type ApprovalRecord, type ConnectionCall } from './approval.js';
import type { ApprovalService } from './approval-service.js';
import type { PolicyDecision } from './authorizer.js';
import { newId } from './ids.js';

/** Default time a connection waits for a human. */
export const DEFAULT_CONNECTION_APPROVAL_TIMEOUT_MS = 60_000;

/** Waits for humans on connections. */
export class ConnectionApprovals {
  constructor(
    private readonly approvals: ApprovalService,
    private readonly timeoutMs = DEFAULT_CONNECTION_APPROVAL_TIMEOUT_MS,
  ) {}

  /** Resolves once a human decided (or the wait timed out): allowed or not, with a reason the agent can read. */
  async resolve(sessionId: string, host: string, port: number, decision: PolicyDecision): Promise<{ allowed: boolean; reason: string }> {
    const mine = (approval: ApprovalRecord) =>
      approval.sessionId === sessionId && isConnectionCall(approval.call) && approval.call.arguments.host === host && approval.call.arguments.port === port;
    const previous = (await this.approvals.list({ sessionId })).filter(mine).at(-1);
    if (previous?.state === 'approved') return { allowed: true, reason: `approved by ${previous.decidedBy ?? 'a human'} (${previous.id})` };
    if (previous?.state === 'denied') return denied(previous);
    let approval: ApprovalRecord = previous?.state === 'pending' ? previous : await this.park(sessionId, host, port, decision);
    const deadline = Date.now() + this.timeoutMs;
    while (approval.state === 'pending' && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(1000, Math.max(1, deadline - Date.now())));
        const onChange = (record: ApprovalRecord) => record.id === approval.id && done();
        const events = this.approvals.events;
        function done(): void {
          clearTimeout(timer);
          events.off('decided', onChange);
          events.off('settled', onChange);
          resolve();
        }
        events.on('decided', onChange);
        events.on('settled', onChange);
      });
      approval = (await this.approvals.list({ sessionId })).find((record) => record.id === approval.id) ?? approval;
    }
    if (approval.state === 'approved') return { allowed: true, reason: `approved by ${approval.decidedBy ?? 'a human'} (${approval.id})` };
    if (approval.state === 'denied') return denied(approval);
    if (approval.state === 'expired') return { allowed: false, reason: `nobody approved the connection in time (approval ${approval.id} expired); retry to ask again` };
    return {
      allowed: false,
      reason: `${decision.reason}; it waited ${Math.round(this.timeoutMs / 1000)} s for approval ${approval.id}: approve it (\`airlock approvals approve ${approval.id}\`) and retry`,
    };
  }

  private async park(sessionId: string, host: string, port: number, decision: PolicyDecision): Promise<ApprovalRecord> {
    const call: ConnectionCall = { id: newId('conn'), sessionId, tool: 'net.connect', arguments: { host, port }, receivedAt: new Date().toISOString() };
    return this.approvals.parkNow(call, decision);
  }
}

function denied(approval: ApprovalRecord): { allowed: boolean; reason: string } {
  return { allowed: false, reason: `a human denied connections to this destination (${approval.id})${approval.decisionReason ? `: ${approval.decisionReason}` : ''}` };
}
