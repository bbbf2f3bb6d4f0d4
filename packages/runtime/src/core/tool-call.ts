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
  'snapshot',
  'fork',
  'desktop.screenshot',
  'desktop.act',
] as const;

/** A tool name. */
export type ToolName = (typeof TOOL_NAMES)[number];

/** Tools that act on one path of the session's filesystem. */
export type FileToolName = Extract<ToolName, `files.${string}`>;

/** Tools that save the session (`snapshot`) or branch it (`fork`); they act on the whole machine, not a path. */
export type LineageToolName = Extract<ToolName, 'snapshot' | 'fork'>;

/** Tools that read (`desktop.screenshot`) or drive (`desktop.act`) the session's display. */
export type DesktopToolName = Extract<ToolName, `desktop.${string}`>;

/** True for the `desktop.*` tools. */
export function isDesktopTool(tool: ToolName): tool is DesktopToolName {
  return tool.startsWith('desktop.');
}

/** True for the `files.*` tools. */
export function isFileTool(tool: ToolName): tool is FileToolName {
  return tool.startsWith('files.');
}

/** One tool call as received (arguments not yet validated). */
export interface ToolCall {
  id: string;
  sessionId: string;
  tool: ToolName;
  arguments: Record<string, unknown>;
  receivedAt: string;
  /** for desktop calls: the focused window's title the decision saw (an approved call runs only on the same window) */
  observed?: { windowTitle: string };
}
