/**
 * `@airlock/sdk/openai-agents`: Airlock for the OpenAI Agents SDK.
 *
 * - `airlockAgentTools(sandbox)`: function tools (bash, read, write, edit)
 *   whose `needsApproval` submits the call to Airlock, so a call the policy
 *   holds becomes a run interruption; `state.approve(item)` then approves it
 *   in Airlock and the next `run` gets its result. For `state.reject(item)`,
 *   also call `rejectHeldCall(sandbox, item)` so that it is refused in Airlock.
 * - `AirlockShell` / `AirlockEditor`: the `Shell` and `Editor` of `shellTool`
 *   and `applyPatchTool`. Those interfaces carry no call id, so a held call
 *   waits for a human in Airlock's own flow (CLI, API), reported through
 *   `onApprovalRequired`.
 */
import { applyDiff, tool, type ApplyPatchOperation, type ApplyPatchResult, type Editor, type RunToolApprovalItem, type Shell, type ShellAction, type ShellResult } from '@openai/agents';
import { z } from 'zod';
import type { Sandbox } from '../sandbox.js';
import type { ToolCallOutcome } from '../types.js';
import { fileText, heldCallsOf, outputText, refusalText, type HeldCallOptions } from './held-calls.js';

/** Options of the Agents SDK adapters. */
export type AirlockAgentOptions = HeldCallOptions;

/** Bash, read, write and edit function tools on the sandbox's session, wired to the run's approval interruptions. */
export function airlockAgentTools(sandbox: Sandbox, options: AirlockAgentOptions = {}) {
  const held = heldCallsOf(sandbox);
  const withDefaults = { ...options, decidedBy: options.decidedBy ?? 'openai-agents' };
  const gate =
    <T>(airlockTool: string, toArgs: (input: T) => Record<string, unknown>) =>
    async (_context: unknown, input: T, callId?: string): Promise<boolean> =>
      // Without a call id there is nothing to match the approval to: execute waits in Airlock's flow instead.
      callId === undefined ? false : held.needsApproval(callId, airlockTool, toArgs(input));
  const run = async (airlockTool: string, args: Record<string, unknown>, details?: { toolCall?: { callId?: string }; signal?: AbortSignal }): Promise<string | Record<string, unknown>> => {
    const outcome = await held.outcome(details?.toolCall?.callId, airlockTool, args, { ...withDefaults, ...(details?.signal ? { signal: details.signal } : {}) });
    // Returned, not thrown: the Agents SDK shows thrown errors to the model as a generic message.
    return outcome.status === 'completed' ? outcome.result : describe(outcome);
  };

  const bashInput = z.object({ command: z.string().min(1), timeout: z.number().positive().max(3600).nullish() });
  const readInput = z.object({ path: z.string().min(1), offset: z.number().int().min(1).nullish(), limit: z.number().int().min(1).nullish() });
  const writeInput = z.object({ path: z.string().min(1), content: z.string() });
  const editInput = z.object({ path: z.string().min(1), old_string: z.string().min(1), new_string: z.string(), replace_all: z.boolean().nullish() });
  const execArgs = (input: z.infer<typeof bashInput>) => ({ command: input.command, timeoutMs: Math.round((input.timeout ?? 120) * 1000) });
  const readArgs = (input: z.infer<typeof readInput>) => ({ path: input.path });
  const writeArgs = (input: z.infer<typeof writeInput>) => ({ path: input.path, content: input.content });
  const editArgs = (input: z.infer<typeof editInput>) => ({ path: input.path, oldString: input.old_string, newString: input.new_string, replaceAll: input.replace_all ?? false });

  return [
    tool({
      name: 'bash',
      description: 'Run a shell command (sh -c, in /workspace) on the Airlock session machine. The session policy may deny it or hold it for approval.',
      parameters: bashInput,
      needsApproval: gate('exec', execArgs),
      execute: async (input, _context, details) => {
        const result = await run('exec', execArgs(input), details);
        if (typeof result === 'string') return result;
        const stderr = outputText(result, 'stderr');
        return `${outputText(result, 'stdout')}${stderr ? `\n[stderr]\n${stderr}` : ''}\n[exit code ${Number(result['exitCode'])}]`;
      },
    }),
    tool({
      name: 'read',
      description: 'Read a text file on the Airlock session; offset/limit select lines (from 1).',
      parameters: readInput,
      needsApproval: gate('files.read', readArgs),
      execute: async (input, _context, details) => {
        const result = await run('files.read', readArgs(input), details);
        if (typeof result === 'string') return result;
        const lines = fileText(result).split('\n');
        const first = input.offset ?? 1;
        return lines.slice(first - 1, first - 1 + (input.limit ?? 2000)).join('\n');
      },
    }),
    tool({
      name: 'write',
      description: 'Write a whole file on the Airlock session (parents created).',
      parameters: writeInput,
      needsApproval: gate('files.write', writeArgs),
      execute: async (input, _context, details) => {
        const result = await run('files.write', writeArgs(input), details);
        return typeof result === 'string' ? result : `wrote ${Number(result['bytes'])} bytes to ${String(result['path'])}`;
      },
    }),
    tool({
      name: 'edit',
      description: 'Replace old_string by new_string in a file on the Airlock session; fails unless it occurs exactly once (or replace_all).',
      parameters: editInput,
      needsApproval: gate('files.edit', editArgs),
      execute: async (input, _context, details) => {
        const result = await run('files.edit', editArgs(input), details);
        return typeof result === 'string' ? result : `replaced ${Number(result['replacements'])} occurrence(s) in ${String(result['path'])}`;
      },
    }),
  ];
}

/** Refuses in Airlock a held call that the run's human rejected (`state.reject(item)`), so nobody approves it later elsewhere. */
export async function rejectHeldCall(sandbox: Sandbox, item: RunToolApprovalItem, options: { reason?: string; decidedBy?: string } = {}): Promise<void> {
  const callId = (item.rawItem as { callId?: string }).callId;
  if (callId !== undefined) await heldCallsOf(sandbox).reject([callId], { decidedBy: options.decidedBy ?? 'openai-agents', ...(options.reason ? { reason: options.reason } : {}) });
}

/** The `Shell` of `shellTool({ shell })`: runs each command on the session through the airlock, stopping at a refusal. */
export class AirlockShell implements Shell {
  constructor(
    private readonly sandbox: Sandbox,
    private readonly options: AirlockAgentOptions = {},
  ) {}

  /** Runs the action's commands in order. */
  async run(action: ShellAction): Promise<ShellResult> {
    const output: ShellResult['output'] = [];
    for (const command of action.commands) {
      const outcome = await heldCallsOf(this.sandbox).outcome(undefined, 'exec', { command, ...(action.timeoutMs ? { timeoutMs: action.timeoutMs } : {}) }, this.options);
      if (outcome.status !== 'completed') {
        output.push({ stdout: '', stderr: describe(outcome), outcome: { type: 'exit', exitCode: 126 } });
        break;
      }
      const result = outcome.result;
      output.push({
        stdout: outputText(result, 'stdout'),
        stderr: outputText(result, 'stderr'),
        outcome: result['timedOut'] ? { type: 'timeout' } : { type: 'exit', exitCode: Number(result['exitCode']) },
      });
    }
    return { output };
  }
}

/** The `Editor` of `applyPatchTool({ editor })`: applies V4A diffs to files on the session through the airlock. */
export class AirlockEditor implements Editor {
  constructor(
    private readonly sandbox: Sandbox,
    private readonly options: AirlockAgentOptions = {},
  ) {}

  /** Creates a file from a create-mode diff. */
  async createFile(operation: Extract<ApplyPatchOperation, { type: 'create_file' }>): Promise<ApplyPatchResult> {
    return this.write(operation.path, applyDiff('', operation.diff, 'create'));
  }

  /** Applies a diff to a file (and moves it when asked). */
  async updateFile(operation: Extract<ApplyPatchOperation, { type: 'update_file' }>): Promise<ApplyPatchResult> {
    const read = await this.call('files.read', { path: operation.path });
    if (read.status !== 'completed') return { status: 'failed', output: describe(read) };
    let next: string;
    try {
      next = applyDiff(fileText(read.result), operation.diff);
    } catch (error) {
      return { status: 'failed', output: `the diff does not apply to ${operation.path}: ${error instanceof Error ? error.message : String(error)}` };
    }
    const written = await this.write(operation.moveTo ?? operation.path, next);
    if (written.status === 'failed' || !operation.moveTo || operation.moveTo === operation.path) return written;
    const removed = await this.call('files.remove', { path: operation.path });
    return removed.status === 'completed' ? { status: 'completed', output: `moved ${operation.path} to ${operation.moveTo}` } : { status: 'failed', output: describe(removed) };
  }

  /** Removes a file. */
  async deleteFile(operation: Extract<ApplyPatchOperation, { type: 'delete_file' }>): Promise<ApplyPatchResult> {
    const removed = await this.call('files.remove', { path: operation.path });
    return removed.status === 'completed' ? { status: 'completed', output: `deleted ${operation.path}` } : { status: 'failed', output: describe(removed) };
  }

  private async write(path: string, content: string): Promise<ApplyPatchResult> {
    const written = await this.call('files.write', { path, content });
    return written.status === 'completed' ? { status: 'completed', output: `wrote ${path}` } : { status: 'failed', output: describe(written) };
  }

  private call(tool: string, args: Record<string, unknown>): Promise<ToolCallOutcome> {
    return heldCallsOf(this.sandbox).outcome(undefined, tool, args, this.options);
  }
}

function describe(outcome: Exclude<ToolCallOutcome, { status: 'completed' }>): string {
  if (outcome.status === 'refused') return refusalText(outcome);
  return `APPROVAL_PENDING: the call waits for a human (approval ${outcome.approvalId}); nothing ran yet`;
}
