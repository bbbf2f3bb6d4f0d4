/**
 * The airlock: the one code path every tool call takes.
 *
 *   validate → normalize → guard → authorize → approve? → execute → check → audit + meter
 *
 * A call that is not allowed never reaches the driver, and every decision is
 * in the audit log before the effect it allows. Expected outcomes (deny, ask,
 * budget exceeded) are returned as values and audited like any other.
 */
import { AirlockError, toAirlockError } from './errors.js';
import { NO_DESKTOP_CONTEXT, type Authorizer, type AuthorizationContext, type PolicyDecision } from './authorizer.js';
import type { SessionService } from './session-service.js';
import type { SessionRecord } from './session.js';
import type { Store } from './store.js';
import type { ToolCall, ToolName } from './tool-call.js';
import { isDesktopTool, TOOL_NAMES } from './tool-call.js';
import type { DesktopTools } from './desktop-tools.js';
import type { DesktopAction } from './desktop-action-schema.js';
import { validateArguments, type ToolArguments } from './tool-schemas.js';
import { callKey, checkGuards, guardLimitsOf, recordOutcome } from './runaway-guard.js';
import { FileOperations } from './file-operations.js';
import { ToolExecutor, type CallTiming, type ExecutionStreams } from './tool-executor.js';
import type { ApprovalService } from './approval-service.js';
import { newId } from './ids.js';
import { systemClock, type Clock } from './clock.js';
import type { TraceContext, ToolCallSpan, Tracer } from './tracer.js';
import { randomBytes } from 'node:crypto';

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

/** The outcome of a tool call, as a value. */
export type ToolCallOutcome =
  | { status: 'completed'; callId: string; tool: ToolName; result: Record<string, unknown>; decision: PolicyDecision; timing: CallTiming }
  | { status: 'refused'; callId: string; tool: ToolName; error: { code: string; message: string; details: Record<string, unknown> }; decision: PolicyDecision | null }
  | { status: 'pending-approval'; callId: string; tool: ToolName; approvalId: string; decision: PolicyDecision };

/** Collaborators of the pipeline. */
export interface ToolPipelineDeps {
  store: Store;
  sessions: SessionService;
  authorizer: Authorizer;
  analyzeCommand: (input: { command?: string; argv?: string[] }) => CommandAnalysis;
  executor: ToolExecutor;
  approvals: ApprovalService;
  /** the desktop tools, for what a desktop call sees before its decision */
  desktop: DesktopTools;
  clock?: Clock;
  /** receives one span per call (optional) */
  tracer?: Tracer;
}

/** Runs tool calls through the airlock. */
export class ToolPipeline {
  private readonly clock: Clock;

  constructor(private readonly deps: ToolPipelineDeps) {
    this.clock = deps.clock ?? systemClock;
    deps.approvals.setExecutor((call, decision) => this.executeApproved(call, decision));
  }

  /** Submits one call. Throws only for failures and invalid input; refusals are values. */
  async submit(sessionId: string, tool: string, rawArguments: unknown, options: CallOptions = {}): Promise<ToolCallOutcome> {
    const tracer = this.deps.tracer;
    if (!tracer) return this.run(sessionId, tool, rawArguments, options);
    const started = Date.now();
    try {
      const outcome = await this.run(sessionId, tool, rawArguments, options);
      tracer.record(toolCallSpan(sessionId, tool, options.trace, started, outcome));
      return outcome;
    } catch (error) {
      tracer.record(toolCallSpan(sessionId, tool, options.trace, started, undefined, toAirlockError(error)));
      throw error;
    }
  }

  private async run(sessionId: string, tool: string, rawArguments: unknown, options: CallOptions): Promise<ToolCallOutcome> {
    const receivedAt = this.clock.now();
    if (!(TOOL_NAMES as readonly string[]).includes(tool)) {
      throw new AirlockError('INVALID_ARGUMENTS', `unknown tool ${JSON.stringify(tool)}; tools are ${TOOL_NAMES.join(', ')}`, {
        details: { field: 'tool' },
      });
    }
    const toolName = tool as ToolName;
    const session = this.deps.sessions.get(sessionId);
    const call: ToolCall = { id: newId('call'), sessionId, tool: toolName, arguments: (rawArguments ?? {}) as Record<string, unknown>, receivedAt: receivedAt.toISOString() };
    let args: ToolArguments<ToolName>;
    try {
      args = validateArguments(toolName, rawArguments);
      if (toolName === 'desktop.act') this.deps.desktop.checkOnScreen(session, args as DesktopAction);
    } catch (error) {
      this.audit(session.id, 'tool-call.rejected', call, { code: toAirlockError(error).code, message: toAirlockError(error).message });
      throw error;
    }
    call.arguments = args as Record<string, unknown>;

    try {
      checkGuards(session, receivedAt);
    } catch (error) {
      const refusal = toAirlockError(error);
      this.audit(session.id, 'tool-call.refused', call, { code: refusal.code, message: refusal.message });
      return { status: 'refused', callId: call.id, tool: toolName, error: errorValue(refusal), decision: null };
    }

    const { context, thumbnail } = await this.normalize(session, toolName, args, call);
    const decision = this.authorize(session, context);
    this.audit(session.id, decisionEvent(decision), call, {
      decision: decision.decision,
      policyIds: decision.policyIds,
      reason: decision.reason,
      enforced: decision.enforced,
      errors: decision.errors,
      context: auditContext(context),
      // the screen the agent was about to act on: the thumbnail's name is the call id
      ...(thumbnail ? { thumbnail } : {}),
    });

    // A screen observed for the decision is returned only by an allowed call that runs now; an approved one looks again.
    if (decision.decision !== 'allow' && decision.enforced) this.deps.desktop.forget(call.id);
    if (decision.enforced && decision.decision === 'deny') {
      this.recordFailure(session.id, call, true);
      const error = new AirlockError('POLICY_DENIED', decision.reason, { details: { decision } });
      return { status: 'refused', callId: call.id, tool: toolName, error: errorValue(error), decision };
    }
    if (decision.enforced && decision.decision === 'ask') {
      const approval = this.deps.approvals.park(call, decision);
      if (!options.approvalWaitMs) return { status: 'pending-approval', callId: call.id, tool: toolName, approvalId: approval.id, decision };
      return this.deps.approvals.waitForOutcome(approval.id, options.approvalWaitMs);
    }
    return this.execute(session, call, decision, context, options, receivedAt);
  }

  /** Runs a call a human approved (exactly once: the approval service claims it first). */
  private async executeApproved(call: ToolCall, decision: PolicyDecision): Promise<ToolCallOutcome> {
    const session = this.deps.sessions.get(call.sessionId);
    const args = validateArguments(call.tool, call.arguments);
    const { observed: approved, ...unobserved } = call;
    const { context } = await this.normalize(session, call.tool, args, unobserved);
    // A person approved an action on one window: if another has the focus now, the action would land elsewhere.
    if (approved !== undefined && call.tool === 'desktop.act' && context.desktop.windowTitle !== approved.windowTitle) {
      const error = new AirlockError(
        'SCREEN_CHANGED',
        `the focused window changed since the action was approved ("${approved.windowTitle}" then, "${context.desktop.windowTitle}" now), so it did not run; take a screenshot and act again`,
        { details: { approvedWindowTitle: approved.windowTitle, windowTitle: context.desktop.windowTitle } },
      );
      this.audit(session.id, 'tool-call.refused', call, { code: error.code, message: error.message });
      return { status: 'refused', callId: call.id, tool: call.tool, error: errorValue(error), decision };
    }
    return this.execute(session, call, decision, context, {}, this.clock.now());
  }

  private async execute(
    session: SessionRecord,
    call: ToolCall,
    decision: PolicyDecision,
    context: AuthorizationContext,
    options: CallOptions,
    receivedAt: Date,
  ): Promise<ToolCallOutcome> {
    this.audit(session.id, 'tool-call.started', call, { path: context.path || undefined });
    try {
      const onWaiting = (reason: 'TAKEOVER') => this.audit(session.id, 'tool-call.waiting', call, { reason });
      const { result, timing, failed } = await this.deps.executor.run(session, call, context, { ...options, onWaiting }, receivedAt);
      this.audit(session.id, 'tool-call.completed', call, { ...auditResult(call.tool, result), timing });
      this.recordFailure(session.id, call, failed);
      await this.deps.sessions.usage.sample(session.id);
      return { status: 'completed', callId: call.id, tool: call.tool, result, decision, timing };
    } catch (error) {
      const failure = toAirlockError(error, 'DRIVER_FAILED');
      this.audit(session.id, 'tool-call.failed', call, { code: failure.code, message: failure.message });
      this.recordFailure(session.id, call, true);
      throw failure;
    }
  }

  private async normalize(
    session: SessionRecord,
    tool: ToolName,
    args: ToolArguments<ToolName>,
    call: ToolCall,
  ): Promise<{ context: AuthorizationContext; thumbnail?: Record<string, unknown> }> {
    const fresh = this.deps.sessions.get(session.id);
    const base: AuthorizationContext = {
      tool,
      command: '',
      programs: [],
      argv: [],
      analysable: true,
      analysisNotes: [],
      path: '',
      cwd: '/workspace',
      tenant: fresh.tenant,
      callCount: fresh.meters.toolCalls,
      identicalFailures: fresh.guard.failures[callKey(tool, args)] ?? 0,
      branches: 0,
      access: 'none',
      env: {},
      desktop: NO_DESKTOP_CONTEXT,
    };
    if (tool === 'snapshot') return { context: base };
    if (tool === 'fork') return { context: { ...base, branches: (args as ToolArguments<'fork'>).count } };
    if (isDesktopTool(tool)) {
      // An action keeps a thumbnail of the screen it is about to change; a screenshot's result is the screen itself.
      const observed = await this.deps.desktop.observe(fresh, call.id, tool === 'desktop.act' ? 'action' : 'screenshot');
      call.observed = { windowTitle: observed.windowTitle };
      const desktop = tool === 'desktop.act' ? desktopContext(args as DesktopAction, observed.windowTitle) : { ...NO_DESKTOP_CONTEXT, action: 'screenshot', windowTitle: observed.windowTitle };
      return { context: { ...base, desktop }, ...(observed.thumbnail ? { thumbnail: { ...observed.thumbnail } } : {}) };
    }
    if (tool === 'exec') {
      const exec = args as ToolArguments<'exec'>;
      const analysis = this.deps.analyzeCommand(exec.command !== undefined ? { command: exec.command } : { argv: exec.argv ?? [] });
      const context: AuthorizationContext = {
        ...base,
        command: exec.command ?? '',
        argv: exec.argv ?? [],
        programs: analysis.programs,
        analysable: analysis.analysable,
        analysisNotes: analysis.reasons,
        cwd: FileOperations.lexical(exec.cwd),
        env: exec.env,
      };
      return { context };
    }
    const path = (args as { path: string }).path;
    const lexical = FileOperations.lexical(path);
    const access = tool === 'files.read' || tool === 'files.list' || tool === 'files.stat' ? 'read' : 'write';
    // Writes replace a final symlink instead of following it; reads follow it.
    const followLast = access === 'read' || tool === 'files.edit';
    const canonical = await this.deps.executor.canonicalPath(fresh, lexical, followLast);
    return { context: { ...base, path: canonical, access } };
  }

  private authorize(session: SessionRecord, context: AuthorizationContext): PolicyDecision {
    try {
      return this.deps.authorizer.authorize(session, context);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { decision: 'deny', policyIds: [], reason: `policy evaluation failed, so the call is denied: ${message}`, errors: [message], enforced: true };
    }
  }

  private recordFailure(sessionId: string, call: ToolCall, failed: boolean): void {
    this.deps.store.transaction(() => {
      const session = this.deps.store.getSession(sessionId);
      if (!session) return;
      const before = session.guard.tripped;
      session.guard = recordOutcome(session.guard, callKey(call.tool, call.arguments), failed, guardLimitsOf(session).maxIdenticalFailures, this.clock.now());
      session.meters.toolCalls += 1;
      this.deps.store.updateSession(session);
      if (!before && session.guard.tripped) {
        this.audit(sessionId, 'guard.tripped', call, { count: session.guard.tripped.count, callKey: session.guard.tripped.callKey });
      }
    });
  }

  /** Appends one audit record for a call; a failure to write stops the call (fail closed). */
  private audit(sessionId: string, type: string, call: ToolCall, data: Record<string, unknown>): void {
    try {
      this.deps.store.appendAudit({
        sessionId,
        type,
        data: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': call.tool,
          'gen_ai.tool.call.id': call.id,
          arguments: auditArguments(call),
          ...data,
        },
      });
    } catch (error) {
      throw new AirlockError('AUDIT_UNAVAILABLE', 'the audit log cannot be written, so the call does not run; check the data dir disk', { cause: error });
    }
  }
}

/** The span of one call, with OpenTelemetry GenAI attribute names. */
function toolCallSpan(sessionId: string, tool: string, trace: TraceContext | undefined, startedMs: number, outcome?: ToolCallOutcome, failure?: AirlockError): ToolCallSpan {
  const attributes: ToolCallSpan['attributes'] = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    'gen_ai.tool.type': 'function',
    'airlock.session.id': sessionId,
  };
  if (outcome) {
    attributes['gen_ai.tool.call.id'] = outcome.callId;
    attributes['airlock.call.status'] = outcome.status;
    if (outcome.decision) {
      attributes['airlock.decision'] = outcome.decision.decision;
      attributes['airlock.policy_ids'] = outcome.decision.policyIds;
      attributes['airlock.decision.enforced'] = outcome.decision.enforced;
    }
    if (outcome.status === 'completed' && typeof outcome.result['exitCode'] === 'number') attributes['airlock.exit_code'] = outcome.result['exitCode'];
    if (outcome.status === 'refused') attributes['error.type'] = outcome.error.code;
    if (outcome.status === 'pending-approval') attributes['airlock.approval.id'] = outcome.approvalId;
  }
  if (failure) attributes['error.type'] = failure.code;
  const errored = failure !== undefined || outcome?.status === 'refused';
  return {
    traceId: trace?.traceId ?? randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    ...(trace ? { parentSpanId: trace.parentSpanId } : {}),
    name: `execute_tool ${tool}`,
    startTimeMs: startedMs,
    endTimeMs: Date.now(),
    attributes,
    status: errored ? 'error' : 'ok',
    ...(failure ? { statusMessage: failure.message } : outcome?.status === 'refused' ? { statusMessage: outcome.error.message } : {}),
  };
}

function decisionEvent(decision: PolicyDecision): string {
  if (!decision.enforced) return 'tool-call.decided';
  return decision.decision === 'allow' ? 'tool-call.authorized' : decision.decision === 'deny' ? 'tool-call.denied' : 'tool-call.held';
}

function errorValue(error: AirlockError): { code: string; message: string; details: Record<string, unknown> } {
  return { code: error.code, message: error.message, details: error.details };
}

/** What the audit keeps of arguments: no file contents, no environment values, no typed text. */
function auditArguments(call: ToolCall): Record<string, unknown> {
  const { content, stdin, env, newString, oldString, text, ...rest } = call.arguments as Record<string, unknown>;
  const kept: Record<string, unknown> = { ...rest };
  if (typeof text === 'string') kept['textCharacters'] = [...text].length;
  if (typeof content === 'string') kept['contentBytes'] = Buffer.byteLength(content);
  if (typeof stdin === 'string') kept['stdinBytes'] = Buffer.byteLength(stdin);
  if (env && typeof env === 'object') kept['envNames'] = Object.keys(env);
  if (typeof oldString === 'string') kept['oldStringBytes'] = Buffer.byteLength(oldString);
  if (typeof newString === 'string') kept['newStringBytes'] = Buffer.byteLength(newString);
  return kept;
}

function auditContext(context: AuthorizationContext): Record<string, unknown> {
  const kept: Record<string, unknown> = { programs: context.programs, analysable: context.analysable, notes: context.analysisNotes, path: context.path, cwd: context.cwd };
  if (context.desktop.action !== '') kept['windowTitle'] = context.desktop.windowTitle;
  return kept;
}

/** The Cedar context of one desktop action (see docs/policy-vocabulary.md). */
function desktopContext(action: DesktopAction, windowTitle: string): AuthorizationContext['desktop'] {
  const point = 'x' in action ? { x: action.x, y: action.y } : { x: 0, y: 0 };
  const end = action.action === 'drag' ? { toX: action.toX, toY: action.toY } : { toX: 0, toY: 0 };
  const text = action.action === 'type' ? action.text : action.action === 'key' ? action.keys : '';
  return { action: action.action, ...point, ...end, text, windowTitle };
}

function auditResult(tool: ToolName, result: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const key of ['exitCode', 'timedOut', 'aborted', 'stdoutBytes', 'stderrBytes', 'bytes', 'replacements', 'entries', 'created', 'failed', 'width', 'height', 'sha256', 'thumbnail', 'pointer', 'waitedMs']) {
    if (result[key] !== undefined) kept[key] = result[key];
  }
  // What a lineage tool made: the audit trail must lead to the snapshot and to every branch.
  if (tool === 'snapshot') kept['snapshotId'] = result['id'];
  if (tool === 'fork') {
    kept['snapshotId'] = (result['snapshot'] as { id?: unknown } | undefined)?.id;
    kept['branchSessionIds'] = (result['branches'] as { sessionId: string | null }[]).map((branch) => branch.sessionId);
  }
  return kept;
}
