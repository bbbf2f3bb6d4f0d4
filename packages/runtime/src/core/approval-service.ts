/**
 * Human approval of calls the policy marks as high-stakes. A held call is
 * parked durably (it survives a restart), decided once by a human, and an
 * approved call runs exactly once: the pending → approved transition is an
 * atomic compare-and-set, and only the server that manages the session runs
 * it. A decision taken through another server sharing the database reaches
 * this one through the store's change feed; events fire from that feed, so a
 * local decision and a remote one look the same to waiters.
 */
import { EventEmitter } from 'node:events';
import { AirlockError, toAirlockError } from './errors.js';
import { isConnectionCall, type ApprovalRecord, type ConnectionCall } from './approval.js';
import type { PolicyDecision } from './authorizer.js';
import type { Store, StoreChange, StoreTransaction } from './store.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ToolCall, ToolName } from './tool-call.js';
import type { ToolCallOutcome } from './tool-call-outcome.js';
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

/** Collaborators of the approval service. */
export interface ApprovalServiceDeps {
  store: Store;
  audit: AuditLog;
  /** which sessions' approved calls this server runs: those it manages */
  isManagedHere(sessionId: string): Promise<boolean>;
  clock?: Clock;
  ttlMs?: number;
  /** told about approved calls that could not be started */
  onError?: (approvalId: string, error: unknown) => void;
}

/** Parks, decides and runs held calls. */
export class ApprovalService {
  /** `requested`, `decided` and `settled` events with the approval record (also for decisions taken on other servers). */
  readonly events = new EventEmitter();
  private executor: ApprovedCallExecutor | undefined;
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly running = new Set<Promise<unknown>>();
  // Approvals this process started running: the change feed may announce one twice.
  private readonly started = new Set<string>();
  private readonly unwatch: () => void;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly deps: ApprovalServiceDeps) {
    this.clock = deps.clock ?? systemClock;
    this.ttlMs = deps.ttlMs ?? DEFAULT_APPROVAL_TTL_MS;
    this.events.setMaxListeners(0);
    this.unwatch = deps.store.watch((change) => this.track(this.onChange(change)));
  }

  /** Wires what executes approved calls (the pipeline; the composition root connects them). */
  setExecutor(executor: ApprovedCallExecutor): void {
    this.executor = executor;
  }

  /** Parks a call inside `tx` (with its decision's audit record, written by the caller); the session may sleep while it waits. */
  async park(tx: StoreTransaction, call: ToolCall | ConnectionCall, decision: PolicyDecision): Promise<ApprovalRecord> {
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
    await tx.insertApproval(approval);
    await this.deps.audit.append(tx, {
      sessionId: call.sessionId,
      type: 'approval.requested',
      data: { approvalId: approval.id, 'gen_ai.tool.call.id': call.id, 'gen_ai.tool.name': call.tool, policyIds: decision.policyIds, reason: decision.reason },
    });
    return approval;
  }

  /** Parks a call in a transaction of its own. */
  async parkNow(call: ToolCall | ConnectionCall, decision: PolicyDecision): Promise<ApprovalRecord> {
    return this.deps.store.transaction((tx) => this.park(tx, call, decision));
  }

  /** An approval, or APPROVAL_NOT_FOUND. */
  async get(id: string): Promise<ApprovalView> {
    await this.expireDue();
    const approval = await this.deps.store.getApproval(id);
    if (!approval)
      throw new AirlockError('APPROVAL_NOT_FOUND', `approval ${id} does not exist; list them with \`airlock approvals ls\``, { details: { approvalId: id } });
    return approval as ApprovalView;
  }

  /** Approvals, optionally only the pending ones. */
  async list(query: { sessionId?: string; pendingOnly?: boolean } = {}): Promise<ApprovalView[]> {
    await this.expireDue();
    return (await this.deps.store.listApprovals({
      ...(query.sessionId === undefined ? {} : { sessionId: query.sessionId }),
      ...(query.pendingOnly ? { states: ['pending'] } : {}),
    })) as ApprovalView[];
  }

  /** Records a human's decision; an approved call starts running at once (on the server managing its session), exactly once. */
  async decide(id: string, verdict: 'approve' | 'deny', by: string, reason: string | null): Promise<ApprovalView> {
    await this.expireDue();
    const current = await this.get(id);
    if (current.state !== 'pending') {
      throw new AirlockError('APPROVAL_ALREADY_DECIDED', `approval ${id} is already ${current.state}; nothing changed`, {
        details: { approvalId: id, state: current.state },
      });
    }
    const next: ApprovalRecord = {
      ...current,
      state: verdict === 'approve' ? 'approved' : 'denied',
      decidedAt: this.clock.now().toISOString(),
      decidedBy: by,
      decisionReason: reason,
    };
    const won = await this.deps.store.transaction(async (tx) => {
      if (!(await tx.transitionApproval(id, 'pending', next))) return false;
      await this.deps.audit.append(tx, {
        sessionId: current.sessionId,
        type: verdict === 'approve' ? 'approval.granted' : 'approval.denied',
        data: { approvalId: id, 'gen_ai.tool.call.id': current.call.id, decidedBy: by, reason },
      });
      return true;
    });
    if (!won)
      throw new AirlockError('APPROVAL_ALREADY_DECIDED', `approval ${id} was decided by someone else; nothing changed`, { details: { approvalId: id } });
    return next;
  }

  /** Waits until the approval is final (executed, denied or expired), `waitMs` passes or `signal` aborts (then it answers pending). */
  async waitForOutcome(id: string, waitMs: number, signal?: AbortSignal): Promise<ToolCallOutcome> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const outcome = this.outcomeOf(await this.get(id));
      if (outcome) return outcome;
      const left = deadline - Date.now();
      if (left <= 0 || this.closed || signal?.aborted) {
        const approval = await this.get(id);
        return {
          status: 'pending-approval',
          callId: approval.call.id,
          tool: approval.call.tool as ToolName,
          approvalId: id,
          decision: { decision: 'ask', policyIds: approval.policyIds, reason: approval.reason, errors: [], enforced: true },
        };
      }
      // An event of this approval ends the wait early; the timer bounds it (and covers a missed notification).
      await new Promise<void>((resolve) => {
        const events = this.events;
        const timer = setTimeout(done, Math.min(left, 1000));
        const onChange = (record: ApprovalRecord) => record.id === id && done();
        function done(): void {
          clearTimeout(timer);
          events.off('settled', onChange);
          events.off('decided', onChange);
          signal?.removeEventListener('abort', done);
          resolve();
        }
        events.on('settled', onChange);
        events.on('decided', onChange);
        signal?.addEventListener('abort', done, { once: true });
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
    if (approval.state === 'denied')
      return refused('APPROVAL_DENIED', `a human denied this call${approval.decisionReason ? `: ${approval.decisionReason}` : ''}`);
    if (approval.state === 'expired') {
      return refused(
        'APPROVAL_EXPIRED',
        approval.decisionReason === 'the session was terminated'
          ? 'the session was terminated before anyone decided; nothing ran'
          : 'nobody approved this call in time; submit it again',
      );
    }
    if (approval.state === 'executed') return approval.outcome;
    return undefined;
  }

  /** Expires pending approvals past their deadline, and those whose session ended: nothing could run them. */
  async expireDue(): Promise<void> {
    const now = this.clock.now();
    for (const approval of await this.deps.store.listApprovals({ states: ['pending'] })) {
      const sessionEnded = (await this.deps.store.getSession(approval.sessionId))?.state === 'terminated';
      if (!sessionEnded && Date.parse(approval.expiresAt) > now.getTime()) continue;
      const why = sessionEnded ? 'the session was terminated' : 'nobody decided in time';
      const next: ApprovalRecord = { ...approval, state: 'expired', decidedAt: now.toISOString(), decisionReason: why };
      await this.deps.store.transaction(async (tx) => {
        if (!(await tx.transitionApproval(approval.id, 'pending', next))) return;
        await this.deps.audit.append(tx, {
          sessionId: approval.sessionId,
          type: 'approval.expired',
          data: { approvalId: approval.id, 'gen_ai.tool.call.id': approval.call.id, reason: why },
        });
      });
    }
  }

  /**
   * After a restart (and whenever changes may have been missed): approved
   * calls of this server's sessions whose execution never started run now;
   * those that started in an earlier life of the server but have no
   * recorded outcome are closed as interrupted (never run twice).
   */
  async resumeAfterRestart(): Promise<void> {
    for (const approval of await this.deps.store.listApprovals({ states: ['approved'] })) {
      if (isConnectionCall(approval.call) || this.started.has(approval.id) || !(await this.deps.isManagedHere(approval.sessionId))) continue;
      const started = (await this.deps.store.listAudit(approval.sessionId, { types: ['tool-call.started'] })).some(
        (record) => record.data['gen_ai.tool.call.id'] === approval.call.id,
      );
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
      this.started.add(approval.id);
      await this.deps.store.transaction((tx) => tx.transitionApproval(approval.id, 'approved', { ...approval, state: 'executed', outcome } as ApprovalRecord));
    }
  }

  /**
   * Also looks for approved calls every `intervalMs`: a backstop for a
   * decision whose notification never arrived (the change feed announces
   * reconnects itself).
   */
  startSweeping(intervalMs: number): void {
    if (this.sweeper || this.closed) return;
    this.sweeper = setInterval(() => this.track(this.resumeAfterRestart()), intervalMs);
    this.sweeper.unref();
  }

  /** Waits for approved calls still running and stops hearing changes (shutdown, tests). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.unwatch();
    await this.drain();
  }

  /** Waits for approved calls still running. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Turns a committed change into events, and starts an approved call of a session managed here. */
  private async onChange(change: StoreChange): Promise<void> {
    if (change.kind === 'resync' && !this.closed) return this.resumeAfterRestart();
    if (change.kind !== 'approval') return;
    const approval = await this.deps.store.getApproval(change.approvalId);
    if (!approval) return;
    if (change.state === 'pending') this.events.emit('requested', approval);
    else if (change.state === 'approved' || change.state === 'denied') this.events.emit('decided', approval);
    else this.events.emit('settled', approval);
    if (change.state !== 'approved' || approval.state !== 'approved') return;
    // A connection approval runs nothing: whoever holds the connection is waiting for this event.
    if (isConnectionCall(approval.call)) {
      this.events.emit('settled', approval);
      return;
    }
    if (!this.closed && (await this.deps.isManagedHere(approval.sessionId))) this.startExecution(approval);
  }

  private startExecution(approval: ApprovalRecord): void {
    const call = approval.call;
    if (isConnectionCall(call) || this.started.has(approval.id)) return;
    this.started.add(approval.id);
    const executor = this.executor;
    if (!executor) throw new AirlockError('INTERNAL', 'no executor wired for approved calls');
    const decision: PolicyDecision = { decision: 'ask', policyIds: approval.policyIds, reason: approval.reason, errors: [], enforced: true };
    this.track(
      executor(call, decision)
        .catch((error: unknown): ToolCallOutcome => {
          const failure = toAirlockError(error);
          return {
            status: 'refused',
            callId: call.id,
            tool: call.tool,
            error: { code: failure.code, message: failure.message, details: failure.details },
            decision,
          };
        })
        .then(async (outcome) => {
          const executed = { ...approval, state: 'executed' as const, outcome };
          await this.deps.store.transaction((tx) => tx.transitionApproval(approval.id, 'approved', executed));
        }),
    );
  }

  private track(task: Promise<unknown>): void {
    const guarded = task.catch((error: unknown) => this.deps.onError?.('', error));
    this.running.add(guarded);
    void guarded.finally(() => this.running.delete(guarded));
  }
}
