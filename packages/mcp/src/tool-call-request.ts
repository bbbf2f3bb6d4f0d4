/**
 * The params of a `tools/call` request, checked the way the specification
 * (2025-11-25, SEP-1303) splits errors: a request that is not a tool call
 * (no name, arguments that are not an object) or names no tool of this
 * server is a protocol error (-32602); arguments that do not fit a known
 * tool's schema are a tool execution error (`isError: true`) whose text
 * names each field and what was expected, so that the model can correct
 * its call.
 */
import type { z } from 'zod';
import { ErrorCode, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_ARGUMENTS, type AirlockToolName, type ToolInput } from './tool-definitions.js';
import { invalidArgumentsResult, type ArgumentProblem } from './tool-results.js';
import { protocolError } from './protocol-error.js';

/** A checked tool call: run it, or answer with the validation result. */
export type CheckedToolCall = { kind: 'call'; tool: AirlockToolName; input: ToolInput<AirlockToolName> } | { kind: 'invalid-arguments'; result: CallToolResult };

/** Checks `tools/call` params; throws a protocol error when they are not a call of a tool of this server. */
export function checkToolCall(params: unknown): CheckedToolCall {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw protocolError(ErrorCode.InvalidParams, 'tools/call needs params {"name": TOOL, "arguments": {...}}', { field: 'params' });
  }
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') {
    throw protocolError(ErrorCode.InvalidParams, 'tools/call needs params.name, the name of the tool (a string); tools/list shows them', { field: 'name' });
  }
  if (!Object.hasOwn(TOOL_ARGUMENTS, name)) {
    throw protocolError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}; the tools are ${Object.keys(TOOL_ARGUMENTS).join(', ')}`, { field: 'name' });
  }
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
    throw protocolError(ErrorCode.InvalidParams, 'tools/call params.arguments must be an object of the tool\'s arguments', { field: 'arguments' });
  }
  const tool = name as AirlockToolName;
  const parsed = TOOL_ARGUMENTS[tool].safeParse(args ?? {});
  if (parsed.success) return { kind: 'call', tool, input: parsed.data };
  return { kind: 'invalid-arguments', result: invalidArgumentsResult(tool, argumentProblems(tool, parsed.error.issues)) };
}

/** Each issue as the field it concerns and what was expected, in words a model acts on. */
export function argumentProblems(tool: AirlockToolName, issues: readonly z.core.$ZodIssue[]): ArgumentProblem[] {
  const known = Object.keys(TOOL_ARGUMENTS[tool].shape);
  return issues.flatMap((issue): ArgumentProblem[] => {
    const field = issue.path.length > 0 ? issue.path.map(String).join('.') : '(arguments)';
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ field: key, message: `not an argument of ${tool} (its arguments are ${known.join(', ')})` }));
    }
    // zod's own wording ("Invalid input: expected number, received string") is rephrased; a schema's own message is kept.
    if (issue.code === 'invalid_type' && issue.message.startsWith('Invalid input')) {
      const received = /received (\w+)/.exec(issue.message)?.[1];
      if (received === 'undefined') return [{ field, message: `required: expected ${article(issue.expected)}` }];
      return [{ field, message: `expected ${article(issue.expected)}${received ? `, got ${article(received)}` : ''}` }];
    }
    return [{ field, message: issue.message }];
  });
}

function article(type: string): string {
  if (type === 'integer' || type === 'int') return 'an integer';
  if (type === 'array' || type === 'object') return `an ${type}`;
  if (type === 'null' || type === 'undefined') return type;
  return `a ${type}`;
}
