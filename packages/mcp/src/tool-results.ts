/**
 * Turns call outcomes into MCP tool results a model can read: text first,
 * with the stable error code and the policy's reason on refusals, then the
 * structured copy (`structuredContent`, matching the tool's `outputSchema`),
 * which is also given as JSON text, as the specification recommends for
 * clients that do not read structured content.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CallRefusal } from './session-calls.js';

/** A result with text for the model and, when given, its structured copy (also as JSON text). */
export function textResult(text: string, structured?: Record<string, unknown>): CallToolResult {
  if (!structured) return { content: [{ type: 'text', text }] };
  // Through JSON once, so that the structured copy is exactly the JSON text (no undefined fields).
  const json = JSON.stringify(structured);
  return { content: [{ type: 'text', text }, { type: 'text', text: json }], structuredContent: JSON.parse(json) as Record<string, unknown> };
}

/** A tool error (`isError: true`) whose text starts with the code, then the message and the policy's reason. */
export function refusalResult(refusal: CallRefusal): CallToolResult {
  const policyIds = refusal.decision?.policyIds ?? [];
  const reason = refusal.decision?.reason;
  const lines = [`${refusal.code}: ${refusal.message}`];
  if (reason && reason !== refusal.message) lines.push(`policy reason: ${reason}`);
  if (policyIds.length > 0) lines.push(`policies: ${policyIds.join(', ')}`);
  if (refusal.code === 'POLICY_DENIED') lines.push('The session policy refused this call and nothing ran; do not retry it unchanged.');
  if (refusal.code === 'APPROVAL_DENIED') lines.push('A human refused this call and nothing ran.');
  return { ...textResult(lines.join('\n'), { status: 'refused', code: refusal.code, message: refusal.message, policyIds, ...(reason ? { reason } : {}) }), isError: true };
}

/** One argument that failed validation: where, and what was expected. */
export interface ArgumentProblem {
  field: string;
  message: string;
}

/**
 * Arguments that do not fit the tool's schema, as a tool execution error
 * (SEP-1303) that the model can read and correct: nothing ran.
 */
export function invalidArgumentsResult(tool: string, problems: readonly ArgumentProblem[]): CallToolResult {
  const message = `invalid arguments for ${tool}: ${problems.map((problem) => `${problem.field}: ${problem.message}`).join('; ')}`;
  const text = `INVALID_ARGUMENTS: ${message}\nNothing ran. Fix the arguments (see the tool's input schema) and call ${tool} again.`;
  return {
    ...textResult(text, { status: 'refused', code: 'INVALID_ARGUMENTS', message, policyIds: [], tool, field: problems[0]?.field ?? '(arguments)', errors: problems }),
    isError: true,
  };
}

/** The result of a call held for a human: nothing ran yet; says how to approve it and how to get the result. */
export function pendingResult(approvalId: string, reason: string | undefined, note?: string): CallToolResult {
  const lines = [
    `APPROVAL_PENDING: the session policy holds this call for a human (approval ${approvalId})${reason ? `: ${reason}` : ''}. Nothing has run yet.`,
    `A human approves it with \`airlock approvals approve ${approvalId}\` (or POST /v1/approvals/${approvalId}/approve), or refuses it with \`airlock approvals deny ${approvalId}\`.`,
    `Then call await_approval with approval_id "${approvalId}" to get its result; do not submit the call again.`,
  ];
  if (note) lines.push(note);
  return textResult(lines.join('\n'), { status: 'pending-approval', approvalId, ...(reason ? { reason } : {}) });
}

/** The result of a command: output, then stderr, exit code and notes. */
export function commandResult(result: Record<string, unknown>): CallToolResult {
  const stdout = decode(result, 'stdout');
  const stderr = decode(result, 'stderr');
  const exitCode = Number(result['exitCode']);
  const parts: string[] = [];
  if (stdout) parts.push(stdout.replace(/\n$/, ''));
  if (stderr) parts.push(`[stderr]\n${stderr.replace(/\n$/, '')}`);
  if (result['timedOut']) parts.push('[the command ran past its timeout and was killed]');
  if (result['stdoutTruncated'] || result['stderrTruncated']) parts.push('[output was truncated]');
  parts.push(`[exit code ${Number.isFinite(exitCode) ? exitCode : 'unknown'}]`);
  return textResult(parts.join('\n'), { exitCode, stdout, stderr, timedOut: Boolean(result['timedOut']) });
}

/** A field of an exec result as text (the server sends binary output as base64). */
export function decode(result: Record<string, unknown>, field: 'stdout' | 'stderr'): string {
  const data = String(result[field] ?? '');
  return result[`${field}Encoding`] === 'base64' ? Buffer.from(data, 'base64').toString('utf8') : data;
}
