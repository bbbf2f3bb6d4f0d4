/**
 * The airlock: the one code path every tool call takes.
 *
 *   validate → contract tools, breaker, budgets (reserved) → authorize without the machine
 *     → approve? → wake (audited, allowed calls only) → resolve the path in the sandbox
 *     → authorize again when it differs → execute → check → audit + meter
 *
 * Everything that can be decided without the machine is decided first, so a
 * call that is not listed, over budget or denied never resumes, unpauses or
 * runs anything in the sandbox. Every decision is in the audit log before
 * the effect it allows, and each step is one store transaction: admission
 * (decision, reservation, start) and completion (result, breaker, activity).
 * Expected outcomes (deny, ask, budget exceeded) are values, audited like any
 * other; resource samples are taken off the call's path.
 */
import { AirlockError, toAirlockError } from './errors.js';
import { NO_DESKTOP_CONTEXT, type Authorizer, type AuthorizationContext, type PolicyDecision } from './authorizer.js';
import type { SessionService } from './session-service.js';
import { requireCallableState, requireOwned, type SessionRecord } from './session.js';
import type { Store, StoreTransaction } from './store.js';
import type { AuditLog } from '../audit/audit-log.js';
import { isDesktopTool, isFileTool, TOOL_NAMES, type ToolCall, type ToolName } from './tool-call.js';
import type { ToolCallOutcome } from './tool-call-outcome.js';
import { validateArguments, type ToolArguments } from './tool-schemas.js';
import { FileOperations } from './file-operations.js';
import type { ToolExecutor, ExecutionStreams } from './tool-executor.js';
import type { ApprovalService } from './approval-service.js';
import { newId } from './ids.js';
import { systemClock, type Clock } from './clock.js';
import type { TraceContext, Tracer } from './tracer.js';
import { toolCallSpan, type CallMarks } from './tool-call-span.js';
import { appendCallRecord, auditContext, auditedWrite, auditResult, decisionEvent, errorValue } from './tool-call-audit.js';
import { DesktopScreening, unseenDesktopContext } from './desktop-screening.js';
import type { TerminalTakeovers } from './terminal-takeovers.js';
import type { DesktopTools } from './desktop-tools.js';
import type { DesktopAction } from './desktop-action-schema.js';
import { breakerAfter, CallAdmission, recordTrip } from './call-admission.js';

/** Result of static analysis of a shell command (see policy/shell-analysis). */
export interface CommandAnalysis {
  programs: string[];
  analysable: boolean;
  reasons: string[];
}

/** Options of one call beyond its arguments. */
export interface CallOptions extends ExecutionStreams {
  /** how long to wait for a human when policy asks (0: return the pending approval at once) */
  approvalWaitMs?: number;
  /** the caller's trace, so the call's span joins it */
  trace?: TraceContext;
}

/** The outcome of a tool call (defined beside the call, shared with approvals). */
export type { ToolCallOutcome };

/** Collaborators of the pipeline. */
export interface ToolPipelineDeps {
  store: Store;
  audit: AuditLog;
  sessions: SessionService;
  authorizer: Authorizer;
  analyzeCommand: (input: { command?: string; argv?: string[] }) => CommandAnalysis;
  executor: ToolExecutor;
  approvals: ApprovalService;
  /** the desktop tools, for what a desktop call sees before its second decision */
  desktop: DesktopTools;
  /** takeover terminals: while a person holds the session, its calls wait (absent: no terminals) */
  terminals?: TerminalTakeovers;
  clock?: Clock;
  /** receives one span per call (optional) */
  tracer?: Tracer;
}

/** Runs tool calls through the airlock. */
export class ToolPipeline {
  private readonly clock: Clock;

  private readonly admission: CallAdmission;
  private readonly screening: DesktopScreening;
  // Held calls whose caller is waiting here: their span is the caller's.
  private readonly awaitedCalls = new Set<string>();

  constructor(private readonly deps: ToolPipelineDeps) {
    this.clock = deps.clock ?? systemClock;
    const admission = new CallAdmission({
      records: deps.sessions.records,
      approvals: deps.approvals,
      authorizer: deps.authorizer,
      audit: deps.audit,
      clock: this.clock,
    });
    this.admission = admission;
    this.screening = new DesktopScreening({
      store: deps.store,
      audit: deps.audit,
      records: deps.sessions.records,
      approvals: deps.approvals,
      admission,
      desktop: deps.desktop,
      clock: this.clock,
    });
  }

  /** Submits one call. Throws only for failures and invalid input; refusals are values. */
  async submit(sessionId: string, tool: string, rawArguments: unknown, options: CallOptions = {}): Promise<ToolCallOutcome> {
    const tracer = this.deps.tracer;
    if (!tracer) return this.run(sessionId, tool, rawArguments, options);
    const marks: CallMarks = { receivedMs: this.clock.now().getTime() };
    try {
      const outcome = await this.run(sessionId, tool, rawArguments, options, marks);
      const approval = marks.approvalId ? await this.deps.approvals.get(marks.approvalId).catch(() => undefined) : undefined;
      if (approval) marks.approval = approval;
      tracer.record(toolCallSpan(sessionId, tool, marks, this.clock.now().getTime(), outcome), options.trace);
      return outcome;
    } catch (error) {
      tracer.record(toolCallSpan(sessionId, tool, marks, this.clock.now().getTime(), undefined, toAirlockError(error)), options.trace);
      throw error;
    }
  }

  /** Runs a call a human approved (exactly once: the approval service claims it first). */
  async runApproved(call: ToolCall, decision: PolicyDecision): Promise<ToolCallOutcome> {
    const tracer = this.deps.tracer;
    // A caller still waiting on this call records its span (covering the wait); one that stopped waiting gets this one.
    if (!tracer || this.awaitedCalls.has(call.id)) return this.runApprovedCall(call, decision);
    const marks: CallMarks = { receivedMs: this.clock.now().getTime() };
    const span = async (outcome?: ToolCallOutcome, failure?: AirlockError) => {
      const approvals = await this.deps.approvals.list({ sessionId: call.sessionId }).catch(() => []);
      const approval = approvals.find((candidate) => candidate.call.id === call.id);
      if (approval) marks.approval = approval;
      tracer.record(toolCallSpan(call.sessionId, call.tool, marks, this.clock.now().getTime(), outcome, failure));
    };
    try {
      const outcome = await this.runApprovedCall(call, decision, marks);
      await span(outcome);
      return outcome;
    } catch (error) {
      await span(undefined, toAirlockError(error));
      throw error;
    }
  }

  private async runApprovedCall(call: ToolCall, decision: PolicyDecision, marks?: CallMarks): Promise<ToolCallOutcome> {
    const receivedAt = this.clock.now();
    const session = await this.deps.sessions.getOwned(call.sessionId);
    const args = validateArguments(call.tool, call.arguments);
    const context = this.prepare(session, call.tool, args);
    const admission = await this.write((tx) => this.admission.admit(tx, session, call, context, 'approved', decision));
    if (marks) marks.decidedMs = this.clock.now().getTime();
    if (admission.kind === 'final') return admission.outcome;
    return this.proceed(admission.session, call, admission.decision, context, {}, receivedAt, 'approved');
  }

  private async run(sessionId: string, tool: string, rawArguments: unknown, options: CallOptions, marks?: CallMarks): Promise<ToolCallOutcome> {
    const receivedAt = this.clock.now();
    if (marks) marks.receivedMs = receivedAt.getTime();
    if (!(TOOL_NAMES as readonly string[]).includes(tool)) {
      throw new AirlockError('INVALID_ARGUMENTS', `unknown tool ${JSON.stringify(tool)}; tools are ${TOOL_NAMES.join(', ')}`, {
        details: { field: 'tool' },
      });
    }
    const toolName = tool as ToolName;
    const session = await this.deps.sessions.get(sessionId);
    requireOwned(session, this.deps.sessions.owner);
    // A session that can never run a call again is refused before anything is recorded in its chain.
    if (session.state === 'terminated' || session.state === 'creating' || session.pendingOperation === 'terminate') requireCallableState(session);
    const call: ToolCall = {
      id: newId('call'),
      sessionId,
      tool: toolName,
      arguments: (rawArguments ?? {}) as Record<string, unknown>,
      receivedAt: receivedAt.toISOString(),
    };
    let args: ToolArguments<ToolName>;
    try {
      args = validateArguments(toolName, rawArguments);
      if (toolName === 'desktop.act') this.deps.desktop.checkOnScreen(session, args as DesktopAction);
    } catch (error) {
      const rejected = toAirlockError(error);
      await this.write((tx) => appendCallRecord(this.deps.audit, tx, 'tool-call.rejected', call, { code: rejected.code, message: rejected.message }));
      throw error;
    }
    call.arguments = args as Record<string, unknown>;
    const context = this.prepare(session, toolName, args);
    const admission = await this.write((tx) => this.admission.admit(tx, session, call, context, 'fresh'));
    if (marks) marks.decidedMs = this.clock.now().getTime();
    const outcome =
      admission.kind === 'final' ? admission.outcome : await this.proceed(admission.session, call, admission.decision, context, options, receivedAt, 'fresh');
    if (marks && outcome.status === 'pending-approval') marks.approvalId = outcome.approvalId;
    if (outcome.status === 'pending-approval' && options.approvalWaitMs) {
      this.awaitedCalls.add(call.id);
      try {
        return await this.deps.approvals.waitForOutcome(outcome.approvalId, options.approvalWaitMs);
      } finally {
        this.awaitedCalls.delete(call.id);
      }
    }
    return outcome;
  }

  /**
   * What a policy can see without the machine: the command's programs, the
   * lexical path of a file call (symlinks are resolved later, in the sandbox).
   */
  private prepare(session: SessionRecord, tool: ToolName, args: ToolArguments<ToolName>): AuthorizationContext {
    const base: AuthorizationContext = {
      tool,
      command: '',
      programs: [],
      argv: [],
      analysable: true,
      analysisNotes: [],
      path: '',
      cwd: '/workspace',
      tenant: session.tenant,
      callCount: 0,
      identicalFailures: 0,
      branches: 0,
      access: 'none',
      env: {},
      desktop: NO_DESKTOP_CONTEXT,
    };
    if (tool === 'snapshot') return base;
    if (isDesktopTool(tool)) return { ...base, desktop: unseenDesktopContext({ tool, arguments: args as Record<string, unknown> }) };
    if (tool === 'fork') return { ...base, branches: (args as ToolArguments<'fork'>).count };
    if (tool === 'exec') {
      const exec = args as ToolArguments<'exec'>;
      const analysis = this.deps.analyzeCommand(exec.command !== undefined ? { command: exec.command } : { argv: exec.argv ?? [] });
      return {
        ...base,
        command: exec.command ?? '',
        argv: exec.argv ?? [],
        programs: analysis.programs,
        analysable: analysis.analysable,
        analysisNotes: analysis.reasons,
        cwd: FileOperations.lexical(exec.cwd),
        env: exec.env,
      };
    }
    const access = tool === 'files.read' || tool === 'files.list' || tool === 'files.stat' ? 'read' : 'write';
    return { ...base, path: FileOperations.lexical((args as { path: string }).path), access };
  }

  /**
   * After admission: a file call wakes the machine (an audited step of this
   * call) to resolve its path in the sandbox, and a path that resolves
   * elsewhere is authorized again; a desktop call looks at the screen and is
   * decided again on it; then the call executes and completes.
   */
  private async proceed(
    session: SessionRecord,
    call: ToolCall,
    decision: PolicyDecision,
    context: AuthorizationContext,
    options: CallOptions,
    receivedAt: Date,
    origin: 'fresh' | 'approved',
  ): Promise<ToolCallOutcome> {
    const wake = { reason: 'call' as const, callId: call.id, tool: call.tool };
    let final = context;
    let decided = decision;
    if (isFileTool(call.tool)) {
      const resolved = await this.resolvePath(session, call, context, wake);
      if (resolved.kind === 'refused') return resolved.outcome;
      final = resolved.context;
    }
    if (isDesktopTool(call.tool)) {
      let screened: Awaited<ReturnType<DesktopScreening['screen']>>;
      try {
        screened = await this.screening.screen(session, call, decision, context, origin, wake);
      } catch (error) {
        await this.fail(call, error, 'observing-screen');
        throw toAirlockError(error, 'DRIVER_FAILED');
      }
      if (screened.kind === 'final') return screened.outcome;
      final = screened.context;
      decided = screened.decision;
    }
    return this.execute(session, call, decided, final, options, receivedAt, wake);
  }

  private async resolvePath(
    session: SessionRecord,
    call: ToolCall,
    context: AuthorizationContext,
    wake: { reason: 'call'; callId: string; tool: ToolName },
  ): Promise<{ kind: 'resolved'; context: AuthorizationContext } | { kind: 'refused'; outcome: ToolCallOutcome }> {
    // Writes replace a final symlink instead of following it, and a stat describes the link itself; reads follow it.
    const followLast = (context.access === 'read' && call.tool !== 'files.stat') || call.tool === 'files.edit';
    let canonical: string;
    try {
      canonical = await this.deps.executor.canonicalPath(session, context.path, followLast, wake);
    } catch (error) {
      await this.fail(call, error, 'resolving-path');
      throw toAirlockError(error, 'DRIVER_FAILED');
    }
    const resolved = { ...context, path: canonical };
    // The path the policy already decided on: nothing new to decide or record.
    if (canonical === context.path) return { kind: 'resolved', context: resolved };
    const fresh = await this.deps.sessions.get(session.id);
    let decision = this.admission.authorize(fresh, resolved);
    // A human approved the lexical path: where it resolves elsewhere, only an allow of that path goes on.
    if (decision.enforced && decision.decision === 'ask') {
      decision = {
        ...decision,
        decision: 'deny',
        reason: `${call.tool} ${context.path} resolves to ${canonical} inside the session, which needs its own approval: submit the call with that path`,
      };
    }
    const refused = decision.enforced && decision.decision === 'deny';
    await this.write(async (tx) => {
      // Nothing ran: the reservation goes back, and the denial counts toward the breaker (session row first: lock order).
      if (refused)
        await this.deps.sessions.records.update(
          session.id,
          (now) => ({ meters: { ...now.meters, toolCalls: Math.max(0, now.meters.toolCalls - 1) }, guard: breakerAfter(now, call, true, this.clock.now()) }),
          undefined,
          { tx },
        );
      await appendCallRecord(this.deps.audit, tx, decisionEvent(decision), call, {
        decision: decision.decision,
        policyIds: decision.policyIds,
        reason: decision.reason,
        enforced: decision.enforced,
        errors: decision.errors,
        stage: 'resolved-path',
        context: auditContext(resolved),
      });
    });
    if (!refused) return { kind: 'resolved', context: resolved };
    const error = new AirlockError('POLICY_DENIED', decision.reason, { details: { decision } });
    return { kind: 'refused', outcome: { status: 'refused', callId: call.id, tool: call.tool, error: errorValue(error), decision } };
  }

  private async execute(
    session: SessionRecord,
    call: ToolCall,
    decision: PolicyDecision,
    context: AuthorizationContext,
    options: CallOptions,
    receivedAt: Date,
    wake: { reason: 'call'; callId: string; tool: ToolName },
  ): Promise<ToolCallOutcome> {
    let ran: Awaited<ReturnType<ToolExecutor['run']>>;
    try {
      // A call waiting for a person to hand the session (or its desktop) back says so in the audit log.
      const onWaiting = (reason: 'TAKEOVER') =>
        void this.write((tx) => appendCallRecord(this.deps.audit, tx, 'tool-call.waiting', call, { reason })).catch(() => undefined);
      await this.deps.terminals?.waitForHandBack(session.id, { ...(options.signal ? { signal: options.signal } : {}), onWaiting });
      ran = await this.deps.executor.run(session, call, context, { ...options, onWaiting }, receivedAt, wake);
    } catch (error) {
      await this.fail(call, error);
      throw toAirlockError(error, 'DRIVER_FAILED');
    }
    const { result, timing, failed } = ran;
    await this.write(async (tx) => {
      // The session row before the chain head, in every transaction: a fixed lock order cannot deadlock.
      const tripped = await this.finish(tx, call, failed);
      await appendCallRecord(this.deps.audit, tx, 'tool-call.completed', call, {
        ...auditResult(call.tool, result),
        ...(isFileTool(call.tool) ? { path: context.path } : {}),
        timing,
      });
      await tripped();
    });
    this.deps.sessions.usage.requestSample(session.id);
    return { status: 'completed', callId: call.id, tool: call.tool, result, decision, timing };
  }

  /** Records a call that failed after admission (in the sandbox, or resolving its path). */
  private async fail(call: ToolCall, error: unknown, stage?: 'resolving-path' | 'observing-screen'): Promise<void> {
    const failure = toAirlockError(error, 'DRIVER_FAILED');
    await this.write(async (tx) => {
      const tripped = await this.finish(tx, call, true);
      await appendCallRecord(this.deps.audit, tx, 'tool-call.failed', call, {
        code: failure.code,
        message: failure.message,
        ...(stage ? { stage } : {}),
      });
      await tripped();
    }).catch(() => undefined);
  }

  /** The breaker and activity after a call ran (or failed trying); returns what records a breaker that just tripped. */
  private async finish(tx: StoreTransaction, call: ToolCall, failed: boolean): Promise<() => Promise<void>> {
    const now = this.clock.now();
    let wasTripped = false;
    const after = await this.deps.sessions.records.update(
      call.sessionId,
      (fresh) => {
        wasTripped = fresh.guard.tripped !== null;
        return { guard: breakerAfter(fresh, call, failed, now), lastActivityAt: now.toISOString() };
      },
      undefined,
      { tx },
    );
    return () => recordTrip(this.deps.audit, tx, call, wasTripped, after);
  }

  /** One transaction; a store that cannot write stops the call (fail closed). */
  private write<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return auditedWrite(this.deps.store, work);
  }
}
