/** Human approval of held calls: list, approve, deny, wait. */
import type { Connection } from './connection.js';
import type { ApprovalInfo, ToolCallOutcome } from './types.js';

/** Approvals, optionally scoped to one session. */
export class Approvals {
  constructor(
    private readonly connection: Connection,
    private readonly sessionId?: string,
  ) {}

  /** Approvals (pending only by default). */
  async list(options: { all?: boolean } = {}): Promise<ApprovalInfo[]> {
    const query = new URLSearchParams();
    if (this.sessionId) query.set('sessionId', this.sessionId);
    if (!options.all) query.set('state', 'pending');
    const { body } = await this.connection.json<{ approvals: ApprovalInfo[] }>('GET', `/v1/approvals?${query}`);
    return body.approvals;
  }

  /** One approval; with `waitSeconds`, waits for its outcome that long. */
  async get(id: string, options: { waitSeconds?: number } = {}): Promise<ApprovalInfo> {
    const wait = options.waitSeconds ? `?waitSeconds=${options.waitSeconds}` : '';
    return (await this.connection.json<ApprovalInfo>('GET', `/v1/approvals/${encodeURIComponent(id)}${wait}`)).body;
  }

  /** Approves: the call runs exactly once. */
  async approve(id: string, options: { reason?: string; by?: string } = {}): Promise<ApprovalInfo> {
    return (await this.connection.json<ApprovalInfo>('POST', `/v1/approvals/${encodeURIComponent(id)}/approve`, options)).body;
  }

  /** Denies: the call never runs. */
  async deny(id: string, options: { reason?: string; by?: string } = {}): Promise<ApprovalInfo> {
    return (await this.connection.json<ApprovalInfo>('POST', `/v1/approvals/${encodeURIComponent(id)}/deny`, options)).body;
  }

  /** Waits until the approval is decided and its call has run (or was refused). */
  async waitForOutcome(id: string, options: { timeoutMs?: number } = {}): Promise<ToolCallOutcome> {
    const deadline = Date.now() + (options.timeoutMs ?? 24 * 3600 * 1000);
    for (;;) {
      const left = Math.max(1, Math.min(60, Math.ceil((deadline - Date.now()) / 1000)));
      const approval = await this.get(id, { waitSeconds: left });
      if (approval.state === 'denied' || approval.state === 'expired') {
        return {
          status: 'refused',
          callId: approval.call.id,
          tool: approval.call.tool,
          error: {
            code: approval.state === 'denied' ? 'APPROVAL_DENIED' : 'APPROVAL_EXPIRED',
            message: approval.state === 'denied' ? `a human denied this call${approval.decisionReason ? `: ${approval.decisionReason}` : ''}` : 'nobody approved this call in time',
            details: { approvalId: id },
          },
          decision: null,
        };
      }
      if (approval.state === 'executed' && approval.outcome) return approval.outcome;
      if (Date.now() >= deadline) {
        return { status: 'pending-approval', callId: approval.call.id, tool: approval.call.tool, approvalId: id, decision: { decision: 'ask', policyIds: approval.policyIds, reason: approval.reason, errors: [], enforced: true } };
      }
    }
  }
}
