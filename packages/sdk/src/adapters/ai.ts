/**
 * `@airlock/sdk/ai`: Airlock tools for the Vercel AI SDK (v6). Each tool's
 * `needsApproval` submits the call to Airlock: a call the policy holds
 * becomes the AI SDK's own approval request (`tool-approval-request`), and
 * approving it there approves it in Airlock and runs it once; refusing it
 * there is recorded in Airlock by `rejectDeniedApprovals` (called for you by
 * the next `needsApproval`). A denied call is a tool error carrying the code
 * and the policy's reason.
 */
import { tool } from 'ai';
import { z } from 'zod';
import type { Sandbox } from '../sandbox.js';
import type { ToolCallOutcome } from '../types.js';
import { fileText, heldCallsOf, outputText, refusalText } from './held-calls.js';

/** Options of `airlockTools`. */
export interface AirlockToolsOptions {
  /** recorded in the audit log as the approver of calls approved in the AI SDK flow (default `ai-sdk`) */
  decidedBy?: string;
}

const bashInput = z.object({
  command: z.string().min(1).describe('shell command, run with sh -c in /workspace on the session machine'),
  timeout: z.number().positive().max(3600).optional().describe('seconds before the command is killed (default 120)'),
});
const readInput = z.object({
  path: z.string().min(1).describe('file to read; relative paths are under /workspace'),
  offset: z.number().int().min(1).optional().describe('first line, counting from 1'),
  limit: z.number().int().min(1).optional().describe('number of lines (default 2000)'),
});
const writeInput = z.object({ path: z.string().min(1), content: z.string().describe('the whole new content') });
const editInput = z.object({
  path: z.string().min(1),
  old_string: z.string().min(1).describe('exact text to replace'),
  new_string: z.string(),
  replace_all: z.boolean().optional().describe('replace every occurrence; otherwise old_string must occur exactly once'),
});

/** Bash, read, write and edit tools on the sandbox's session, every call through the airlock. */
export function airlockTools(sandbox: Sandbox, options: AirlockToolsOptions = {}) {
  const held = heldCallsOf(sandbox);
  const decidedBy = options.decidedBy ?? 'ai-sdk';
  const gate =
    (airlockTool: string, toArgs: (input: never) => Record<string, unknown>) =>
    async (input: unknown, context: { toolCallId: string; messages: unknown[] }): Promise<boolean> => {
      await rejectDeniedApprovals(sandbox, context.messages, options);
      return held.needsApproval(context.toolCallId, airlockTool, toArgs(input as never));
    };
  const run = async (airlockTool: string, args: Record<string, unknown>, context: { toolCallId: string; abortSignal?: AbortSignal }) =>
    settled(await held.outcome(context.toolCallId, airlockTool, args, { decidedBy, ...(context.abortSignal ? { signal: context.abortSignal } : {}) }));

  const execArgs = (input: z.infer<typeof bashInput>) => ({ command: input.command, timeoutMs: Math.round((input.timeout ?? 120) * 1000) });
  const readArgs = (input: z.infer<typeof readInput>) => ({ path: input.path });
  const writeArgs = (input: z.infer<typeof writeInput>) => ({ path: input.path, content: input.content });
  const editArgs = (input: z.infer<typeof editInput>) => ({ path: input.path, oldString: input.old_string, newString: input.new_string, replaceAll: input.replace_all ?? false });

  return {
    bash: tool({
      description: 'Run a shell command on the Airlock session machine; returns exit code, stdout and stderr. The session policy may deny it or hold it for approval.',
      inputSchema: bashInput,
      needsApproval: gate('exec', execArgs),
      execute: async (input, context) => {
        const result = await run('exec', execArgs(input), context);
        return { exitCode: Number(result['exitCode']), stdout: outputText(result, 'stdout'), stderr: outputText(result, 'stderr'), timedOut: Boolean(result['timedOut']) };
      },
    }),
    read: tool({
      description: 'Read a text file on the Airlock session; offset/limit select lines.',
      inputSchema: readInput,
      needsApproval: gate('files.read', readArgs),
      execute: async (input, context) => {
        const result = await run('files.read', readArgs(input), context);
        return lineRange(String(result['path']), fileText(result), input.offset ?? 1, input.limit ?? 2000);
      },
    }),
    write: tool({
      description: 'Write a whole file on the Airlock session (parents created), replacing any existing one.',
      inputSchema: writeInput,
      needsApproval: gate('files.write', writeArgs),
      execute: async (input, context) => {
        const result = await run('files.write', writeArgs(input), context);
        return { path: String(result['path']), bytes: Number(result['bytes']) };
      },
    }),
    edit: tool({
      description: 'Replace old_string by new_string in a file on the Airlock session; fails unless old_string occurs exactly once (or replace_all).',
      inputSchema: editInput,
      needsApproval: gate('files.edit', editArgs),
      execute: async (input, context) => {
        const result = await run('files.edit', editArgs(input), context);
        return { path: String(result['path']), replacements: Number(result['replacements']) };
      },
    }),
  };
}

/**
 * Denies in Airlock the held calls a human refused in the AI SDK flow
 * (`tool-approval-response` with `approved: false` in `messages`), so that
 * nobody approves them later elsewhere. The tools call it on their own at the
 * next `needsApproval`; call it yourself when a run ends on a refusal.
 */
export async function rejectDeniedApprovals(sandbox: Sandbox, messages: readonly unknown[], options: AirlockToolsOptions = {}): Promise<void> {
  const callOfApproval = new Map<string, string>();
  const refused: string[] = [];
  for (const message of messages) {
    const content = (message as { content?: unknown }).content;
    if (!Array.isArray(content)) continue;
    for (const part of content as { type?: string; approvalId?: string; toolCallId?: string; approved?: boolean }[]) {
      if (part.type === 'tool-approval-request' && part.approvalId && part.toolCallId) callOfApproval.set(part.approvalId, part.toolCallId);
      if (part.type === 'tool-approval-response' && part.approved === false && part.approvalId) refused.push(part.approvalId);
    }
  }
  const callIds = refused.map((approvalId) => callOfApproval.get(approvalId)).filter((id): id is string => id !== undefined);
  if (callIds.length > 0) await heldCallsOf(sandbox).reject(callIds, { decidedBy: options.decidedBy ?? 'ai-sdk' });
}

/** The result of a completed call, or an error the model reads (code, message, policy reason). */
function settled(outcome: ToolCallOutcome): Record<string, unknown> {
  if (outcome.status === 'completed') return outcome.result;
  if (outcome.status === 'refused') throw new Error(refusalText(outcome));
  throw new Error(`APPROVAL_PENDING: the call waits for a human (approval ${outcome.approvalId}); nothing ran yet`);
}

function lineRange(path: string, content: string, offset: number, limit: number): Record<string, unknown> {
  const lines = content.replace(/\n$/, '').split('\n');
  const shown = content === '' ? [] : lines.slice(offset - 1, offset - 1 + limit);
  return { path, content: shown.join('\n'), firstLine: offset, lastLine: offset + shown.length - 1, totalLines: content === '' ? 0 : lines.length };
}
