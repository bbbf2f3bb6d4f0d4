/**
 * What each MCP tool does, as Airlock tool calls: bash → exec, read/write/
 * edit/ls → files.*, glob/grep → find/grep run as argv (no shell, so no
 * quoting to get wrong) in the session, where the policy sees them like any
 * command. A held call goes to the approval flow; its outcome, or the fact
 * that it is still pending, is formatted for the model.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AirlockToolName, ToolInput } from './tool-definitions.js';
import type { CallOutcome, SessionCalls } from './session-calls.js';
import type { HeldCallResult } from './approval-flow.js';
import { commandResult, decode, pendingResult, refusalResult, textResult } from './tool-results.js';
import { findPathPattern, globToRegExp } from './glob-pattern.js';
import { handleComputer } from './computer-tool.js';

/** What a handler needs for one call. */
export interface ToolCallContext {
  calls: SessionCalls;
  signal: AbortSignal;
  /** when the client asked for progress: the output of a `bash` command while it runs */
  onOutput?: (bytes: Uint8Array) => void;
  /** settles a call the policy held (confirmation, bounded wait, or pending) */
  settle: (pending: Extract<CallOutcome, { status: 'pending-approval' }>, tool: string, args: Record<string, unknown>) => Promise<HeldCallResult>;
}

type Completed = Extract<CallOutcome, { status: 'completed' }>;

const DEFAULT_READ_LINES = 2000;
const MAX_LINE_CHARS = 2000;
const DEFAULT_GREP_LINES = 250;
const MAX_GLOB_RESULTS = 1000;

/** Runs one tool with validated arguments. */
export async function handleTool(name: AirlockToolName, input: ToolInput<AirlockToolName>, context: ToolCallContext): Promise<CallToolResult> {
  switch (name) {
    case 'bash': {
      const args = input as ToolInput<'bash'>;
      const call = { command: args.command, timeoutMs: Math.round((args.timeout ?? 120) * 1000), ...(args.cwd ? { cwd: args.cwd } : {}) };
      return through(context, 'exec', call, (done) => commandResult(done.result), context.onOutput);
    }
    case 'read': {
      const args = input as ToolInput<'read'>;
      return through(context, 'files.read', { path: args.path, encoding: 'base64' }, (done) => readResult(done.result, args.offset, args.limit));
    }
    case 'write': {
      const args = input as ToolInput<'write'>;
      return through(context, 'files.write', { path: args.path, content: args.content }, (done) => formatCompleted(done));
    }
    case 'edit': {
      const args = input as ToolInput<'edit'>;
      const call = { path: args.path, oldString: args.old_string, newString: args.new_string, replaceAll: args.replace_all ?? false };
      return through(context, 'files.edit', call, (done) => formatCompleted(done));
    }
    case 'ls': {
      const args = input as ToolInput<'ls'>;
      return through(context, 'files.list', { path: args.path ?? '/workspace' }, (done) => formatCompleted(done));
    }
    case 'snapshot': {
      const args = input as ToolInput<'snapshot'>;
      return through(context, 'snapshot', args.name === undefined ? {} : { name: args.name }, (done) => formatCompleted(done));
    }
    case 'fork': {
      const args = input as ToolInput<'fork'>;
      return through(context, 'fork', { count: args.count, ...(args.snapshot_id === undefined ? {} : { snapshotId: args.snapshot_id }) }, (done) => formatCompleted(done));
    }
    case 'glob':
      return glob(input as ToolInput<'glob'>, context);
    case 'grep':
      return grep(input as ToolInput<'grep'>, context);
    case 'computer':
      return handleComputer(input as ToolInput<'computer'>, context);
    case 'await_approval': {
      const args = input as ToolInput<'await_approval'>;
      const outcome = await context.calls.awaitOutcome(args.approval_id, (args.timeout ?? 60) * 1000, context.signal);
      return present(outcome, undefined, formatCompleted);
    }
  }
}

async function through(
  context: ToolCallContext,
  tool: string,
  args: Record<string, unknown>,
  onCompleted: (done: Completed) => CallToolResult,
  onOutput?: (bytes: Uint8Array) => void,
): Promise<CallToolResult> {
  let outcome = await context.calls.submit(tool, args, context.signal, onOutput);
  let note: string | undefined;
  if (outcome.status === 'pending-approval') ({ outcome, note } = await context.settle(outcome, tool, args));
  return present(outcome, note, onCompleted);
}

function present(outcome: CallOutcome, note: string | undefined, onCompleted: (done: Completed) => CallToolResult): CallToolResult {
  if (outcome.status === 'refused') {
    if (outcome.code === 'EDIT_AMBIGUOUS') return refusalResult({ ...outcome, message: outcome.message.replace('pass replaceAll', 'pass replace_all: true') });
    return refusalResult(outcome);
  }
  if (outcome.status === 'pending-approval') return pendingResult(outcome.approvalId, outcome.decision.reason, note);
  return onCompleted(outcome);
}

/** Formats any completed Airlock call (used when a held call's result arrives later). */
function formatCompleted(done: Completed): CallToolResult {
  const result = done.result;
  switch (done.tool) {
    case 'exec':
      return commandResult(result);
    case 'files.read':
      return readResult(result, undefined, undefined);
    case 'files.write':
      return textResult(`wrote ${Number(result['bytes'])} bytes to ${String(result['path'])}`, { path: result['path'], bytes: result['bytes'] });
    case 'files.edit': {
      const count = Number(result['replacements']);
      return textResult(`replaced ${count} occurrence${count === 1 ? '' : 's'} in ${String(result['path'])}`, { path: result['path'], replacements: count });
    }
    case 'files.list':
      return listResult(result);
    case 'snapshot':
      return snapshotResult(result);
    case 'fork':
      return forkResult(result);
    case 'desktop.screenshot':
      return {
        content: [{ type: 'image', data: String(result['png']), mimeType: 'image/png' }],
        structuredContent: { width: Number(result['width']), height: Number(result['height']) },
      };
    case 'desktop.act': {
      const pointer = result['pointer'] as { x: number; y: number } | undefined;
      const where = pointer ? `; the pointer is at (${pointer.x}, ${pointer.y})` : '';
      return textResult(`${String(result['action'])} done${where}. Take a screenshot to see the screen now.`, { action: result['action'], ...(pointer ? { pointer } : {}) });
    }
    default:
      return textResult(JSON.stringify(result, null, 2), result);
  }
}

function readResult(result: Record<string, unknown>, offset: number | undefined, limit: number | undefined): CallToolResult {
  const bytes = Buffer.from(String(result['content'] ?? ''), result['encoding'] === 'base64' ? 'base64' : 'utf8');
  const path = String(result['path']);
  if (bytes.includes(0)) return textResult(`${path} is a binary file of ${Number(result['size'])} bytes; inspect it with bash (e.g. xxd or file).`, { path, binary: true });
  const text = bytes.toString('utf8');
  if (text.length === 0) return textResult(`${path} is empty.`, { path, lines: 0 });
  const lines = text.replace(/\n$/, '').split('\n');
  const first = Math.max(1, offset ?? 1);
  const count = limit ?? DEFAULT_READ_LINES;
  const shown = lines.slice(first - 1, first - 1 + count);
  if (shown.length === 0) return textResult(`${path} has ${lines.length} lines; offset ${first} is past the end.`, { path, lines: lines.length });
  const width = String(first + shown.length - 1).length;
  const body = shown
    .map((line, index) => `${String(first + index).padStart(Math.max(width, 6))}\t${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line cut]` : line}`)
    .join('\n');
  const last = first + shown.length - 1;
  const notes: string[] = [];
  if (first > 1 || last < lines.length) notes.push(`[lines ${first}-${last} of ${lines.length}; pass offset/limit for others]`);
  if (result['truncated']) notes.push(`[the file is ${Number(result['size'])} bytes; only the first ${bytes.length} were read]`);
  return textResult([body, ...notes].join('\n'), { path, firstLine: first, lastLine: last, totalLines: lines.length });
}

function snapshotResult(result: Record<string, unknown>): CallToolResult {
  const holds = (result['contents'] as string[] | undefined)?.join(' and ') ?? 'memory and disk';
  const named = result['name'] ? ` "${String(result['name'])}"` : '';
  const megabytes = (Number(result['sizeBytes']) / (1024 * 1024)).toFixed(1);
  return textResult(`snapshot ${String(result['id'])}${named} taken: ${holds}, ${megabytes} MB. Fork from it with fork { count, snapshot_id: "${String(result['id'])}" }.`, {
    snapshotId: result['id'],
    name: result['name'],
    contents: result['contents'],
    sizeBytes: result['sizeBytes'],
  });
}

function forkResult(result: Record<string, unknown>): CallToolResult {
  type Branch = { index: number; sessionId: string | null; state?: string; error?: { code: string; message: string } };
  const branches = (result['branches'] as Branch[] | undefined) ?? [];
  const snapshotId = String((result['snapshot'] as { id?: unknown } | undefined)?.id ?? '');
  const lines = branches.map((branch) =>
    branch.error
      ? `branch ${branch.index}: failed (${branch.error.code}: ${branch.error.message})`
      : `branch ${branch.index}: session ${String(branch.sessionId)} (${branch.state ?? 'running'})`,
  );
  const created = branches.filter((branch) => !branch.error).length;
  const head = `forked ${created} of ${branches.length} branch${branches.length === 1 ? '' : 'es'} from snapshot ${snapshotId}; this connection stays on the current session.`;
  const structured = { snapshotId, branches: branches.map((branch) => ({ index: branch.index, sessionId: branch.sessionId, ...(branch.error ? { error: branch.error } : { state: branch.state }) })) };
  // Some branches made is a result the model must act on; none made is an error.
  return { ...textResult([head, ...lines].join('\n'), structured), ...(created === 0 ? { isError: true } : {}) };
}

function listResult(result: Record<string, unknown>): CallToolResult {
  const entries = (result['entries'] as { name: string; type: string; size: number; target?: string }[] | undefined) ?? [];
  const lines = entries
    .slice()
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((entry) => {
      if (entry.type === 'directory') return `${entry.name}/`;
      if (entry.type === 'symlink') return `${entry.name} -> ${entry.target ?? '?'}`;
      return `${entry.name}\t${entry.size} bytes`;
    });
  return textResult(lines.length > 0 ? lines.join('\n') : `${String(result['path'])} is empty.`, { path: result['path'], entries });
}

async function glob(args: ToolInput<'glob'>, context: ToolCallContext): Promise<CallToolResult> {
  const root = searchRoot(args.path);
  let matcher: RegExp;
  try {
    matcher = globToRegExp(args.pattern);
  } catch (error) {
    return refusalResult({ status: 'refused', code: 'INVALID_ARGUMENTS', message: (error as Error).message, decision: null });
  }
  // Only options BusyBox find has too: images may ship either.
  const argv = ['find', root, '-path', findPathPattern(root, args.pattern), '!', '-type', 'd', '-print'];
  return through(context, 'exec', { argv }, (done) => {
    const prefix = root === '/' ? '/' : `${root}/`;
    const matches = decode(done.result, 'stdout')
      .split('\n')
      .filter((path) => path.startsWith(prefix) && matcher.test(path.slice(prefix.length)))
      .sort();
    if (matches.length === 0) {
      const stderr = decode(done.result, 'stderr').trim();
      if (Number(done.result['exitCode']) !== 0 && stderr) return refusalResult({ status: 'refused', code: 'SEARCH_FAILED', message: stderr, decision: null });
      return textResult(`no files match ${args.pattern} under ${root}`, { matches: [] });
    }
    const shown = matches.slice(0, MAX_GLOB_RESULTS);
    const more = matches.length > shown.length ? `\n[${matches.length - shown.length} more not shown; narrow the pattern]` : '';
    return textResult(shown.join('\n') + more, { matches: shown, total: matches.length });
  });
}

async function grep(args: ToolInput<'grep'>, context: ToolCallContext): Promise<CallToolResult> {
  const root = searchRoot(args.path);
  // find selects the files (skipping .git, honouring include) and grep -H names each match: GNU and BusyBox both do this.
  const argv = ['find', root, '-name', '.git', '-prune', '-o', '-type', 'f'];
  if (args.include) argv.push('-name', args.include);
  argv.push('-exec', 'grep', '-nHsE', ...(args.ignore_case ? ['-i'] : []), '-e', args.pattern, '--', '{}', '+');
  const limit = args.limit ?? DEFAULT_GREP_LINES;
  return through(context, 'exec', { argv }, (done) => {
    const stdout = decode(done.result, 'stdout');
    if (!stdout) {
      const stderr = decode(done.result, 'stderr').trim();
      if (stderr) return refusalResult({ status: 'refused', code: 'SEARCH_FAILED', message: stderr, decision: null });
      return textResult(`no matches for ${args.pattern} under ${root}`, { matches: 0 });
    }
    const lines = stdout.replace(/\n$/, '').split('\n');
    const shown = lines.slice(0, limit);
    const more = lines.length > shown.length ? `\n[${lines.length - shown.length} more matching lines not shown; narrow the search or raise limit]` : '';
    const truncated = done.result['stdoutTruncated'] ? '\n[output was truncated by the server]' : '';
    return textResult(shown.join('\n') + more + truncated, { matches: lines.length });
  });
}

/** A search root as an absolute path (relative ones are under /workspace, like the files API; never an option to find). */
function searchRoot(path: string | undefined): string {
  const given = path ?? '/workspace';
  const absolute = given.startsWith('/') ? given : `/workspace/${given}`;
  return absolute.replace(/\/+$/, '') || '/';
}
