/** `sandbox.files`: file operations on the session, each authorized like any call. */
import type { Connection } from './connection.js';
import type { Approvals } from './approvals.js';
import { base64ToBytes, bytesToBase64, outcomeError } from './outcome.js';
import type { FileInfo, ToolCallOutcome } from './types.js';

/** Runs one tool and returns its result, waiting for approval when policy asks. */
export async function callTool(
  connection: Connection,
  approvals: Approvals,
  sessionId: string,
  tool: string,
  args: Record<string, unknown>,
  options: { waitForApproval?: boolean; onApprovalRequired?: (approvalId: string) => void } = {},
): Promise<Record<string, unknown>> {
  const response = await connection.send('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/tools/${tool}`, args);
  let outcome = (await response.json()) as ToolCallOutcome;
  if (outcome.status === 'pending-approval' && options.waitForApproval !== false) {
    options.onApprovalRequired?.(outcome.approvalId);
    outcome = await approvals.waitForOutcome(outcome.approvalId);
  }
  if (outcome.status !== 'completed') throw outcomeError(outcome);
  return outcome.result;
}

/** File operations. Paths are resolved inside the session (relative ones against /workspace). */
export class Files {
  constructor(
    private readonly connection: Connection,
    private readonly sessionId: string,
    private readonly approvals: Approvals,
  ) {}

  /** Reads a text file. */
  async read(path: string, options?: { format?: 'text' }): Promise<string>;
  /** Reads a file as bytes. */
  async read(path: string, options: { format: 'bytes' }): Promise<Uint8Array>;
  async read(path: string, options: { format?: 'text' | 'bytes' } = {}): Promise<string | Uint8Array> {
    const result = await this.call('files.read', { path, encoding: 'base64' });
    const bytes = base64ToBytes(String(result['content']));
    return options.format === 'bytes' ? bytes : new TextDecoder().decode(bytes);
  }

  /** Writes a file atomically (parents created). */
  async write(path: string, content: string | Uint8Array): Promise<{ path: string; bytes: number }> {
    const args = typeof content === 'string' ? { path, content } : { path, content: bytesToBase64(content), encoding: 'base64' };
    const result = await this.call('files.write', args);
    return { path: String(result['path']), bytes: Number(result['bytes']) };
  }

  /** Replaces `oldString` by `newString`; fails unless it occurs exactly once (or `replaceAll`). */
  async edit(path: string, oldString: string, newString: string, options: { replaceAll?: boolean } = {}): Promise<{ replacements: number }> {
    const result = await this.call('files.edit', { path, oldString, newString, replaceAll: options.replaceAll ?? false });
    return { replacements: Number(result['replacements']) };
  }

  /** Lists a directory. */
  async list(path = '/workspace'): Promise<FileInfo[]> {
    return (await this.call('files.list', { path }))['entries'] as FileInfo[];
  }

  /** Stat of a path (symlinks not followed). */
  async stat(path: string): Promise<FileInfo> {
    return (await this.call('files.stat', { path })) as unknown as FileInfo;
  }

  /** Removes a file, or a directory with `recursive`. */
  async remove(path: string, options: { recursive?: boolean } = {}): Promise<void> {
    await this.call('files.remove', { path, recursive: options.recursive ?? false });
  }

  /** Creates a directory and its parents. */
  async makeDir(path: string): Promise<void> {
    await this.call('files.mkdir', { path });
  }

  private call(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    return callTool(this.connection, this.approvals, this.sessionId, tool, args);
  }
}
