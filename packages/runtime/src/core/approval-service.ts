/**
 * Human approval of calls the policy marks as high-stakes. A held call is
 * parked durably (it survives a restart), decided once by a human, and an
 * approved call runs exactly once: the pending → approved transition is an
 * atomic compare-and-set, and only its winner executes the call.
 */
import { EventEmitter } from 'node:events';
import { AirlockError, toAirlockError } from './errors.js';
import { isConnectionCall, type ApprovalRecord, type ConnectionCall } from './approval.js';
import type { PolicyDecision } from './authorizer.js';
import type { Store } from './store.js';
import type { ToolCall, ToolName } from './tool-call.js';
import type { ToolCallOutcome } from './tool-pipeline.js';
import { newId } from './ids.js';
import { systemClock, type Clock } from './clock.js';

/** Default time a held call waits for a human before it expires. */
export const DEFAULT_APPROVAL_TTL_MS = 60 * 60 * 1000;

/** Runs an approved call through the rest of the pipeline. */
export type ApprovedCallExecutor = (call: ToolCall, decision: PolicyDecision) => Promise<ToolCallOutcome>;

/** An approval as the API shows it: the record plus the outcome of the call once it ran. */
export interface ApprovalView extends ApprovalRecord {
  outcome?: ToolCallOutcome;
}

/** Parks, decides and runs held calls. */
export class ApprovalService {
  /** `requested` and `decided` events with the approval record, for the server-sent event stream. */
  readonly events = new EventEmitter();
  private executor: ApprovedCallExecutor | undefined;
  private readonly clock: Clock;
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    private readonly store: Store,
    options: { clock?: Clock; ttlMs?: number } = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.ttlMs = options.ttlMs ?? DEFAULT_APPROVAL_TTL_MS;
    this.events.setMaxListeners(0);
  }

  private readonly ttlMs: number;

  /** Wires the pipeline that executes approved calls. */
  setExecutor(executor: ApprovedCallExecutor): void {
    this.executor = executor;
  }

  /** Parks a call; the session may sleep while it waits. */
  park(call: ToolCall | ConnectionCall, decision: PolicyDecision): ApprovalRecord {
    const now = this.clock.now();
    const approval: ApprovalRecord = {
      id: newId('apr'),
      sessionId: call.sessionId,
      state: 'pending',
      call,
      policyIds: decision.policyIds,
      reason: decision.reason,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + this.ttlMs).toISOString(),
      decidedAt: null,
      decidedBy: null,
      decisionReason: null,
    };
    this.store.transaction(() => {
      this.store.insertApproval(approval);
      this.store.appendAudit({ sessionId: call.sessionId, type: 'approval.requested', data: { approvalId: approval.id, 'gen_ai.tool.call.id': call.id, 'gen_ai.tool.name': call.tool, policyIds: decision.policyIds, reason: decision.reason } });
    });
    this.events.emit('requested', approval);
    return approval;
  }

  /** An approval, or APPROVAL_NOT_FOUND. */
  get(id: string): ApprovalView {
    this.expireDue();
    const approval = this.store.getApproval(id);
    if (!approval) throw new AirlockError('APPROVAL_NOT_FOUND', `approval ${id} does not exist; list them with \`airlock approvals ls\``, { details: { approvalId: id } });
    return approval as ApprovalView;
  }

  /** Approvals, optionally only the pending ones. */
  list(query: { sessionId?: string; pendingOnly?: boolean } = {}): ApprovalView[] {
    this.expireDue();
    return this.store.listApprovals({
      ...(query.sessionId === undefined ? {} : { sessionId: query.sessionId }),
      ...(query.pendingOnly ? { states: ['pending'] } : {}),
    }) as ApprovalView[];
  }

  /** Records a human's decision; an approved call starts running at once, exactly once. */
  decide(id: string, verdict: 'approve' | 'deny', by: string, reason: string | null): ApprovalView {
    this.expireDue();
    const current = this.get(id);
    if (current.state !== 'pending') {
      throw new AirlockError('APPROVAL_ALREADY_DECIDED', `approval ${id} is already ${current.state}; nothing changed`, { details: { approvalId: id, state: current.state } });
    }
    const next: ApprovalRecord = { ...current, state: verdict === 'approve' ? 'approved' : 'denied', decidedAt: this.clock.now().toISOString(), decidedBy: by, decisionReason: reason };
    const won = this.store.transaction(() => {
      if (!this.store.transitionApproval(id, 'pending', next)) return false;
      this.store.appendAudit({ sessionId: current.sessionId, type: verdict === 'approve' ? 'approval.granted' : 'approval.denied', data: { approvalId: id, 'gen_ai.tool.call.id': current.call.id, decidedBy: by, reason } });
      return true;
    });
    if (!won) throw new AirlockError('APPROVAL_ALREADY_DECIDED', `approval ${id} was decided by someone else; nothing changed`, { details: { approvalId: id } });
    this.events.emit('decided', next);
    // A connection approval runs nothing: whoever holds the connection is waiting for this event.
    if (verdict === 'approve' && isConnectionCall(next.call)) this.events.emit('settled', next);
    else if (verdict === 'approve') this.startExecution(next);
    return next;
  }

  /** Waits until the approval is final (executed, denied or expired) or `waitMs` passes. */
  async waitForOutcome(id: string, waitMs: number): Promise<ToolCallOutcome> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const outcome = this.outcomeOf(this.get(id));
      if (outcome) return outcome;
      const left = deadline - Date.now();
      if (left <= 0) {
        const approval = this.get(id);
        return { status: 'pending-approval', callId: approval.call.id, tool: approval.call.tool as ToolName, approvalId: id, decision: { decision: 'ask', policyIds: approval.policyIds, reason: approval.reason, errors: [], enforced: true } };
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, 1000));
        const onChange = (record: ApprovalRecord) => record.id === id && done();
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.events.once('settled', onChange);
        this.events.once('decided', onChange);
      });
    }
  }

  /** The final outcome of an approval, or undefined while it is still open. */
  outcomeOf(approval: ApprovalView): ToolCallOutcome | undefined {
    const refused = (code: string, message: string): ToolCallOutcome => ({
      status: 'refused',
      callId: approval.call.id,
      // a connection approval reports its tool as 'net.connect'
      tool: approval.call.tool as ToolName,
      error: { code, message, details: { approvalId: approval.id } },
      decision: { decision: 'ask', policyIds: approval.policyIds, reason: approval.reason, errors: [], enforced: true },
    });
    if (approval.state === 'denied') return refused('APPROVAL_DENIED', `a human denied this call${approval.decisionReason ? `: ${approval.decisionReason}` : ''}`);
    if (approval.state === 'expired') {
      return refused('APPROVAL_EXPIRED', approval.decisionReason === 'the session was terminated' ? 'the session was terminated before anyone decided; nothing ran' : 'nobody approved this call in time; submit it again');
    }
    if (approval.state === 'executed') return approval.outcome;
    return undefined;
  }

  /** Expires pending approvals past their deadline, and those whose session ended: nothing could run them. */
  expireDue(): void {
    const now = this.clock.now();
    for (const approval of this.store.listApprovals({ states: ['pending'] })) {
      const sessionEnded = this.store.getSession(approval.sessionId)?.state === 'terminated';
      if (!sessionEnded && Date.parse(approval.expiresAt) > now.getTime()) continue;
      const why = sessionEnded ? 'the session was terminated' : 'nobody decided in time';
      const next: ApprovalRecord = { ...approval, state: 'expired', decidedAt: now.toISOString(), decisionReason: why };
      if (this.store.transitionApproval(approval.id, 'pending', next)) {
        this.store.appendAudit({ sessionId: approval.sessionId, type: 'approval.expired', data: { approvalId: approval.id, 'gen_ai.tool.call.id': approval.call.id, reason: why } });
        this.events.emit('settled', next);
      }
    }
  }

  /**
   * After a restart: approved calls whose execution never started run now;
   * those that started but have no recorded outcome are closed as interrupted
   * (never run twice).
   */
  resumeAfterRestart(): void {
    for (const approval of this.store.listApprovals({ states: ['approved'] })) {
      if (isConnectionCall(approval.call)) continue;
      const started = this.store
        .listAudit(approval.sessionId, { types: ['tool-call.started'] })
        .some((record) => record.data['gen_ai.tool.call.id'] === approval.call.id);
      if (!started) {
        this.startExecution(approval);
        continue;
      }
      const outcome: ToolCallOutcome = {
        status: 'refused',
        callId: approval.call.id,
        tool: approval.call.tool,
        error: { code: 'INTERNAL', message: 'the server stopped while this approved call ran; it was not run again', details: { approvalId: approval.id } },
        decision: null,
      };
      this.store.transitionApproval(approval.id, 'approved', { ...approval, state: 'executed', outcome } as ApprovalRecord);
    }
  }

  /** Waits for approved calls still running (for a clean shutdown and for tests). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }

  private startExecution(approval: ApprovalRecord): void {
    const call = approval.call;
    if (isConnectionCall(call)) return;
    const executor = this.executor;
    if (!executor) throw new AirlockError('INTERNAL', 'no executor wired for approved calls');
    const decision: PolicyDecision = { decision: 'ask', policyIds: approval.policyIds, reason: approval.reason, errors: [], enforced: true };
    const task = executor(call, decision)
      .catch((error: unknown): ToolCallOutcome => {
        const failure = toAirlockError(error);
        return { status: 'refused', callId: call.id, tool: call.tool, error: { code: failure.code, message: failure.message, details: failure.details }, decision };
      })
      .then((outcome) => {
        const executed = { ...approval, state: 'executed' as const, outcome };
        this.store.transitionApproval(approval.id, 'approved', executed);
        this.events.emit('settled', executed);
      });
    this.running.add(task);
    void task.finally(() => this.running.delete(task));
  }
}
