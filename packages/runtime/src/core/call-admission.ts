/**
 * Admission of a tool call: everything decided without the machine, in the
 * caller's transaction on the locked session. The contract's tool list, the
 * runaway breaker and the budgets come first; then the policy on what is
 * known before the sandbox is touched (the lexical path, the command's
 * programs). An allowed call reserves its share of the budget here, a held
 * call is parked, a refused one is recorded; nothing reaches the machine
 * before this commits.
 */
import { AirlockError } from './errors.js';
import type { Authorizer, AuthorizationContext, PolicyDecision } from './authorizer.js';
import type { ApprovalService } from './approval-service.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { Clock } from './clock.js';
import type { SessionRecord } from './session.js';
import type { SessionChange, SessionRecords } from './session-records.js';
import type { StoreTransaction } from './store.js';
import { isDesktopTool, isFileTool, type ToolCall, type ToolName } from './tool-call.js';
import type { ToolCallOutcome } from './tool-call-outcome.js';
import { callKey, guardLimitsOf, guardRefusal, recordOutcome } from './runaway-guard.js';
import { appendCallRecord, auditContext, decisionEvent, errorValue } from './tool-call-audit.js';

/** What admission decided: a refusal or a held call (final for now), or a call that may go on. */
export type Admission = { kind: 'final'; outcome: ToolCallOutcome } | { kind: 'admitted'; decision: PolicyDecision; session: SessionRecord };

/** Collaborators of admission. */
export interface CallAdmissionDeps {
  records: SessionRecords;
  approvals: ApprovalService;
  authorizer: Authorizer;
  audit: AuditLog;
  clock: Clock;
}

/** Admits tool calls. */
export class CallAdmission {
  constructor(private readonly deps: CallAdmissionDeps) {}

  private get clock(): Clock {
    return this.deps.clock;
  }

  /**
   * Admission, in one transaction on the locked session: the contract's tool
   * list, the breaker and the budgets, then the policy on what is known
   * without the machine. An allowed call reserves its share of the budget
   * here; a held call is parked. A call admitted on a human's approval skips
   * the policy (the human decided) but not the breaker or the budgets.
   */
  async admit(
    tx: StoreTransaction,
    session: SessionRecord,
    call: ToolCall,
    prepared: AuthorizationContext,
    origin: 'fresh' | 'approved',
    approvedDecision?: PolicyDecision,
  ): Promise<Admission> {
    const { records, approvals, audit } = this.deps;
    // A desktop call is decided again once its screen is seen: here an ask only lets it look (and reserves its share).
    const screened = isDesktopTool(call.tool);
    let verdict: { refusal?: AirlockError; decision?: PolicyDecision; context: AuthorizationContext } = { context: prepared };
    const now = this.clock.now();
    const admitted = await records.update(
      session.id,
      (fresh) => {
        const context: AuthorizationContext = {
          ...prepared,
          callCount: fresh.meters.toolCalls,
          identicalFailures: fresh.guard.failures[callKey(call.tool, call.arguments)] ?? 0,
        };
        const listed = origin === 'approved' ? undefined : this.listedDecision(fresh, call.tool);
        if (listed && listed.enforced) {
          verdict = { decision: listed, context };
          return { guard: breakerAfter(fresh, call, true, now) };
        }
        const refusal = guardRefusal(fresh, now);
        if (refusal) {
          verdict = { refusal, context };
          return undefined;
        }
        const decision = origin === 'approved' && approvedDecision ? approvedDecision : (listed ?? this.authorize(fresh, context));
        verdict = { decision, context };
        if (decision.enforced && decision.decision === 'deny') return { guard: breakerAfter(fresh, call, true, now) };
        if (decision.enforced && decision.decision === 'ask' && origin === 'fresh' && !screened) return undefined;
        return { meters: { ...fresh.meters, toolCalls: fresh.meters.toolCalls + 1 }, lastActivityAt: now.toISOString() };
      },
      undefined,
      { tx },
    );
    const { refusal, decision, context } = verdict;
    if (refusal) {
      await appendCallRecord(audit, tx, 'tool-call.refused', call, { code: refusal.code, message: refusal.message });
      return { kind: 'final', outcome: { status: 'refused', callId: call.id, tool: call.tool, error: errorValue(refusal), decision: null } };
    }
    if (!decision) throw new AirlockError('INTERNAL', 'admission reached no decision');
    if (origin === 'fresh') {
      await appendCallRecord(audit, tx, decisionEvent(decision), call, {
        ...(screened ? { stage: 'before-machine' } : {}),
        decision: decision.decision,
        policyIds: decision.policyIds,
        reason: decision.reason,
        enforced: decision.enforced,
        errors: decision.errors,
        context: auditContext(context),
      });
      await recordTrip(audit, tx, call, session.guard.tripped !== null, admitted);
    }
    if (decision.enforced && decision.decision === 'deny') {
      const error = new AirlockError('POLICY_DENIED', decision.reason, { details: { decision } });
      return { kind: 'final', outcome: { status: 'refused', callId: call.id, tool: call.tool, error: errorValue(error), decision } };
    }
    if (decision.enforced && decision.decision === 'ask' && origin === 'fresh' && !screened) {
      const approval = await approvals.park(tx, call, decision);
      return { kind: 'final', outcome: { status: 'pending-approval', callId: call.id, tool: call.tool, approvalId: approval.id, decision } };
    }
    // A desktop call starts once its screen was seen and decided on (desktop-screening.ts).
    if (screened) return { kind: 'admitted', decision, session: admitted };
    // Execution starts with this commit: for a file call, with waking the machine and resolving its path there.
    await appendCallRecord(audit, tx, 'tool-call.started', call, isFileTool(call.tool) ? { path: context.path } : {});
    return { kind: 'admitted', decision, session: admitted };
  }

  /** The contract's tool list, decided in the core before any policy: undefined when the tool is listed. */
  listedDecision(session: SessionRecord, tool: ToolName): PolicyDecision | undefined {
    const tools: readonly string[] = session.contract.tools;
    if (tools.includes(tool)) return undefined;
    return {
      decision: 'deny',
      policyIds: ['contract.tools'],
      reason: `the tool ${tool} is not in this session's contract (tools: ${tools.join(', ')})`,
      errors: [],
      enforced: session.contract.enforcement !== 'log-only',
    };
  }

  /** The authorizer's decision; one that throws is a deny that records why (fail closed). */
  authorize(session: SessionRecord, context: AuthorizationContext): PolicyDecision {
    try {
      return this.deps.authorizer.authorize(session, context);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { decision: 'deny', policyIds: [], reason: `policy evaluation failed, so the call is denied: ${message}`, errors: [message], enforced: true };
    }
  }
}

/** Records that the breaker just tripped on `call`, if it did. */
export async function recordTrip(log: AuditLog, tx: StoreTransaction, call: ToolCall, wasTripped: boolean, session: SessionRecord): Promise<void> {
  if (wasTripped || !session.guard.tripped) return;
  await appendCallRecord(log, tx, 'guard.tripped', call, { count: session.guard.tripped.count, callKey: session.guard.tripped.callKey });
}

/** The breaker after one more outcome of `call`. */
export function breakerAfter(session: SessionRecord, call: ToolCall, failed: boolean, now: Date): SessionChange['guard'] & object {
  return recordOutcome(session.guard, callKey(call.tool, call.arguments), failed, guardLimitsOf(session).maxIdenticalFailures, now);
}
