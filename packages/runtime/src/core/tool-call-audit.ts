/**
 * What the audit log keeps of a tool call: its decision's event name, its
 * arguments without contents or secrets, the context the policy saw, and
 * its result's sizes and codes.
 */
import { AirlockError } from './errors.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { Store, StoreTransaction } from './store.js';
import type { AuthorizationContext, PolicyDecision } from './authorizer.js';
import type { ToolCall, ToolName } from './tool-call.js';

/** The audit type of a decision: authorized, denied, held, or (not enforced) decided. */
export function decisionEvent(decision: PolicyDecision): string {
  if (!decision.enforced) return 'tool-call.decided';
  return decision.decision === 'allow' ? 'tool-call.authorized' : decision.decision === 'deny' ? 'tool-call.denied' : 'tool-call.held';
}

/** An error as an outcome carries it. */
export function errorValue(error: AirlockError): { code: string; message: string; details: Record<string, unknown> } {
  return { code: error.code, message: error.message, details: error.details };
}

/** What the audit keeps of arguments: no file contents, no environment values, no typed text. */
export function auditArguments(call: ToolCall): Record<string, unknown> {
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

/** What the audit keeps of the context a policy saw. */
export function auditContext(context: AuthorizationContext): Record<string, unknown> {
  const kept: Record<string, unknown> = {
    programs: context.programs,
    analysable: context.analysable,
    notes: context.analysisNotes,
    path: context.path,
    cwd: context.cwd,
  };
  if (context.desktop.action !== '') kept['windowTitle'] = context.desktop.windowTitle;
  return kept;
}

/** What the audit keeps of a result: sizes and codes, never contents; what a lineage tool made. */
export function auditResult(tool: ToolName, result: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const key of [
    'exitCode',
    'timedOut',
    'aborted',
    'stdoutBytes',
    'stderrBytes',
    'bytes',
    'replacements',
    'entries',
    'created',
    'failed',
    'width',
    'height',
    'sha256',
    'thumbnail',
    'pointer',
    'waitedMs',
  ]) {
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

/** Appends one record of a call to its session's chain inside `tx`, with the call's GenAI attributes and its arguments as the audit keeps them. */
export async function appendCallRecord(log: AuditLog, tx: StoreTransaction, type: string, call: ToolCall, data: Record<string, unknown>): Promise<void> {
  await log.append(tx, {
    sessionId: call.sessionId,
    type,
    data: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': call.tool,
      'gen_ai.tool.call.id': call.id,
      arguments: auditArguments(call),
      ...data,
    },
  });
}

/** One transaction of a call's records; a store that cannot write stops the call (fail closed: AUDIT_UNAVAILABLE). */
export async function auditedWrite<T>(store: Store, work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
  try {
    return await store.transaction(work);
  } catch (error) {
    if (error instanceof AirlockError && error.code !== 'INTERNAL') throw error;
    throw new AirlockError('AUDIT_UNAVAILABLE', 'the audit log cannot be written, so the call does not run; check the data dir disk (or the database)', {
      cause: error,
    });
  }
}
