/**
 * The second decision of a desktop call. What a desktop policy cares about
 * most (which window has the focus) is only known on the machine, so a
 * desktop call is decided twice: admission decides what it can without the
 * machine (tool list, breaker, budgets, the action itself; a deny there
 * never wakes anything), then the call looks at the screen (the wake is an
 * audited step of it) and is decided again with the window's title. An
 * action keeps a thumbnail of the screen it was decided on; a call held for
 * a person is parked with the window it saw, and once approved runs only if
 * that window still has the focus.
 */
import { AirlockError } from './errors.js';
import { NO_DESKTOP_CONTEXT, type AuthorizationContext, type PolicyDecision } from './authorizer.js';
import type { ApprovalService } from './approval-service.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { Clock } from './clock.js';
import type { DesktopAction } from './desktop-action-schema.js';
import type { DesktopTools } from './desktop-tools.js';
import type { WakeReason } from './machine-hibernation.js';
import type { SessionRecord } from './session.js';
import type { SessionRecords } from './session-records.js';
import type { Store, StoreTransaction } from './store.js';
import type { ToolCall } from './tool-call.js';
import type { ToolCallOutcome } from './tool-call-outcome.js';
import { appendCallRecord, auditContext, auditedWrite, decisionEvent, errorValue } from './tool-call-audit.js';
import { breakerAfter, recordTrip, type CallAdmission } from './call-admission.js';

/** After screening: the call goes on with what it saw, or it ended here (refused, or held for a person). */
export type Screening = { kind: 'screened'; context: AuthorizationContext; decision: PolicyDecision } | { kind: 'final'; outcome: ToolCallOutcome };

/** Collaborators of screening. */
export interface DesktopScreeningDeps {
  store: Store;
  audit: AuditLog;
  records: SessionRecords;
  approvals: ApprovalService;
  admission: CallAdmission;
  desktop: DesktopTools;
  clock: Clock;
}

/** The Cedar context of one desktop action (see docs/policy-vocabulary.md); the window title is "" until the screen was seen. */
export function desktopContext(action: DesktopAction, windowTitle: string): AuthorizationContext['desktop'] {
  const point = 'x' in action ? { x: action.x, y: action.y } : { x: 0, y: 0 };
  const end = action.action === 'drag' ? { toX: action.toX, toY: action.toY } : { toX: 0, toY: 0 };
  const text = action.action === 'type' ? action.text : action.action === 'key' ? action.keys : '';
  return { action: action.action, ...point, ...end, text, windowTitle };
}

/** The desktop context of a call before its screen was seen. */
export function unseenDesktopContext(call: Pick<ToolCall, 'tool' | 'arguments'>): AuthorizationContext['desktop'] {
  return call.tool === 'desktop.act' ? desktopContext(call.arguments as unknown as DesktopAction, '') : { ...NO_DESKTOP_CONTEXT, action: 'screenshot' };
}

/** Looks at the screen of desktop calls and decides them again. */
export class DesktopScreening {
  constructor(private readonly deps: DesktopScreeningDeps) {}

  /** Observes the screen for `call` (waking the machine) and decides the call on what it shows. */
  async screen(
    session: SessionRecord,
    call: ToolCall,
    decision: PolicyDecision,
    context: AuthorizationContext,
    origin: 'fresh' | 'approved',
    wake: WakeReason,
  ): Promise<Screening> {
    const { desktop, records, admission, approvals, audit } = this.deps;
    const approvedTitle = call.observed?.windowTitle;
    const observed = await desktop.observe(session, call.id, call.tool === 'desktop.act' ? 'action' : 'screenshot', wake);
    const seen: AuthorizationContext = {
      ...context,
      desktop:
        call.tool === 'desktop.act'
          ? desktopContext(call.arguments as unknown as DesktopAction, observed.windowTitle)
          : { ...NO_DESKTOP_CONTEXT, action: 'screenshot', windowTitle: observed.windowTitle },
    };
    const thumbnail = observed.thumbnail ? { thumbnail: { ...observed.thumbnail } } : {};
    call.observed = { windowTitle: observed.windowTitle };

    if (origin === 'approved') {
      // A person approved an action on one window: if another has the focus now, the action would land elsewhere.
      if (call.tool === 'desktop.act' && approvedTitle !== undefined && observed.windowTitle !== approvedTitle) {
        desktop.forget(call.id);
        const error = new AirlockError(
          'SCREEN_CHANGED',
          `the focused window changed since the action was approved ("${approvedTitle}" then, "${observed.windowTitle}" now), so it did not run; take a screenshot and act again`,
          { details: { approvedWindowTitle: approvedTitle, windowTitle: observed.windowTitle } },
        );
        await this.write(async (tx) => {
          await this.giveBack(tx, session, call, false);
          await appendCallRecord(audit, tx, 'tool-call.refused', call, { code: error.code, message: error.message, ...thumbnail });
        });
        return { kind: 'final', outcome: { status: 'refused', callId: call.id, tool: call.tool, error: errorValue(error), decision } };
      }
      await this.write((tx) => appendCallRecord(audit, tx, 'tool-call.started', call, thumbnail));
      return { kind: 'screened', context: seen, decision };
    }

    const second = admission.authorize(await records.get(session.id), seen);
    const allowed = !second.enforced || second.decision === 'allow';
    // The pixels of a screenshot leave the server only for a call that runs now.
    if (!allowed) desktop.forget(call.id);
    const outcome = await this.write(async (tx): Promise<ToolCallOutcome | undefined> => {
      const tripped = allowed ? undefined : await this.giveBack(tx, session, call, second.decision === 'deny');
      await appendCallRecord(audit, tx, decisionEvent(second), call, {
        stage: 'screen',
        decision: second.decision,
        policyIds: second.policyIds,
        reason: second.reason,
        enforced: second.enforced,
        errors: second.errors,
        context: auditContext(seen),
        ...thumbnail,
      });
      await tripped?.();
      if (allowed) {
        await appendCallRecord(audit, tx, 'tool-call.started', call, {});
        return undefined;
      }
      if (second.decision === 'deny') {
        const error = new AirlockError('POLICY_DENIED', second.reason, { details: { decision: second } });
        return { status: 'refused', callId: call.id, tool: call.tool, error: errorValue(error), decision: second };
      }
      const approval = await approvals.park(tx, call, second);
      return { status: 'pending-approval', callId: call.id, tool: call.tool, approvalId: approval.id, decision: second };
    });
    return outcome ? { kind: 'final', outcome } : { kind: 'screened', context: seen, decision: second };
  }

  /** The reservation goes back (nothing ran); a denial also counts toward the breaker. Returns what records a trip. */
  private async giveBack(tx: StoreTransaction, session: SessionRecord, call: ToolCall, denied: boolean): Promise<() => Promise<void>> {
    let wasTripped = false;
    const after = await this.deps.records.update(
      session.id,
      (now) => {
        wasTripped = now.guard.tripped !== null;
        return {
          meters: { ...now.meters, toolCalls: Math.max(0, now.meters.toolCalls - 1) },
          ...(denied ? { guard: breakerAfter(now, call, true, this.deps.clock.now()) } : {}),
        };
      },
      undefined,
      { tx },
    );
    return () => recordTrip(this.deps.audit, tx, call, wasTripped, after);
  }

  private write<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return auditedWrite(this.deps.store, work);
  }
}
