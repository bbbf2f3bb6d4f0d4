/**
 * Tool calls: what an agent asks a session to do. Every tool goes through
 * the same pipeline (validate → normalize → guard → authorize → approve →
 * execute → check → audit), so a tool is described by data, not by code paths.
 */

/** Names of the tools; also the Cedar action ids (`Airlock::Action::"<name>"`). */
export const TOOL_NAMES = [
  'exec',
  'files.read',
  'files.write',
  'files.edit',
  'files.list',
  'files.remove',
  'files.stat',
  'files.mkdir',
] as const;

/** A tool name. */
export type ToolName = (typeof TOOL_NAMES)[number];

/** One tool call as received (arguments not yet validated). */
export interface ToolCall {
  id: string;
  sessionId: string;
  tool: ToolName;
  arguments: Record<string, unknown>;
  receivedAt: string;
}
