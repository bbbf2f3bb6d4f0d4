/**
 * The MCP tools Airlock offers: names, descriptions, argument schemas and
 * annotations. Data only; the handlers live in tool-handlers.ts. Schemas are
 * strict so that a misspelt field is named in the error instead of ignored.
 */
import { z } from 'zod';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { COMPUTER_CALLS, COMPUTER_DESCRIPTION, computerArguments } from './computer-tool.js';
import { outputSchemaOf } from './tool-output-schemas.js';

const path = z.string().min(1, 'path must not be empty').max(4096);

/** Argument schemas, one per tool. */
export const TOOL_ARGUMENTS = {
  bash: z.strictObject({
    command: z.string().min(1, 'command must not be empty').max(256 * 1024).describe('shell command, run with sh -c on the session machine'),
    timeout: z.number().positive().max(3600).optional().describe('seconds before the command is killed (default 120)'),
    cwd: z.string().min(1).max(4096).optional().describe('working directory (default /workspace)'),
  }),
  read: z.strictObject({
    path: path.describe('file to read; relative paths are under /workspace'),
    offset: z.number().int().min(1).optional().describe('first line to return, counting from 1'),
    limit: z.number().int().min(1).max(100_000).optional().describe('number of lines to return (default 2000)'),
  }),
  write: z.strictObject({
    path: path.describe('file to write; parents are created; an existing file is replaced'),
    content: z.string().describe('the whole new content, as text'),
  }),
  edit: z.strictObject({
    path: path.describe('file to edit'),
    old_string: z.string().min(1, 'old_string must not be empty').describe('exact text to replace'),
    new_string: z.string().describe('replacement text'),
    replace_all: z.boolean().optional().describe('replace every occurrence; without it the edit fails unless old_string occurs exactly once'),
  }),
  ls: z.strictObject({
    path: path.optional().describe('directory to list (default /workspace)'),
  }),
  glob: z.strictObject({
    pattern: z.string().min(1).max(4096).describe('glob relative to path: * ? [abc] {a,b}, and **/ for any depth (e.g. **/*.ts)'),
    path: path.optional().describe('directory to search (default /workspace)'),
  }),
  grep: z.strictObject({
    pattern: z.string().min(1).max(4096).describe('extended regular expression (grep -E)'),
    path: path.optional().describe('file or directory to search, recursively (default /workspace)'),
    include: z.string().min(1).max(1024).optional().describe('only files whose name matches this glob, e.g. *.ts'),
    ignore_case: z.boolean().optional(),
    limit: z.number().int().min(1).max(10_000).optional().describe('most matching lines to return (default 250)'),
  }),
  snapshot: z.strictObject({
    name: z.string().min(1).max(128).regex(/^\P{Cc}+$/u, 'expected no control characters').optional().describe('a name to find the snapshot by later'),
  }),
  fork: z.strictObject({
    count: z.number().int('count must be a whole number').min(1).describe('number of independent branches to create'),
    snapshot_id: z.string().regex(/^snap_[A-Za-z0-9_-]+$/, 'a snapshot id looks like snap_...').optional().describe('fork from this snapshot of the session (from the snapshot tool) instead of from now'),
  }),
  computer: computerArguments,
  await_approval: z.strictObject({
    approval_id: z.string().regex(/^apr_[A-Za-z0-9_-]+$/, 'an approval id looks like apr_...'),
    timeout: z.number().positive().max(3600).optional().describe('seconds to wait for the decision (default 60)'),
  }),
} as const;

/** Name of an Airlock MCP tool. */
export type AirlockToolName = keyof typeof TOOL_ARGUMENTS;

/** Parsed arguments of a tool. */
export type ToolInput<T extends AirlockToolName> = z.output<(typeof TOOL_ARGUMENTS)[T]>;

interface ToolDescription {
  title: string;
  description: string;
  annotations: ToolAnnotations;
}

const AIRLOCK_NOTE = 'Runs on the Airlock session machine; the session policy may deny it or hold it for a human.';

/** What clients and models read about each tool. */
export const TOOL_DESCRIPTIONS: Record<AirlockToolName, ToolDescription> = {
  bash: {
    title: 'Run a shell command',
    description: `Runs a shell command (sh -c) in /workspace on the session machine and returns its output and exit code. ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  },
  read: {
    title: 'Read a file',
    description: `Reads a text file with line numbers; offset and limit select a range of lines. ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  write: {
    title: 'Write a file',
    description: `Writes a whole file (atomically, parents created), replacing any existing one. ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  },
  edit: {
    title: 'Edit a file',
    description: `Replaces old_string by new_string in a file. Fails when old_string is missing, or occurs more than once unless replace_all is set. ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  },
  ls: {
    title: 'List a directory',
    description: `Lists a directory: name, type and size of each entry. ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  glob: {
    title: 'Find files by name',
    description: `Finds files whose path under the search directory matches a glob, sorted by path (runs find in the session). ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  grep: {
    title: 'Search file contents',
    description: `Searches files for a regular expression and returns file:line:text matches, skipping .git (runs find and grep in the session). ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  snapshot: {
    title: 'Snapshot the session',
    description: `Saves the whole session machine (memory, running processes and disk) as a snapshot and returns its id; the machine runs on. Fork from it later to try several approaches from this point. ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  fork: {
    title: 'Fork the session',
    description: `Creates count independent copies (branches) of the session machine, from now or from a snapshot, each with its own disk, processes and memory, and returns their session ids. This connection stays on the current session; a branch is reached by connecting to its session id. ${AIRLOCK_NOTE}`,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  computer: {
    ...COMPUTER_DESCRIPTION,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  },
  await_approval: {
    title: 'Wait for a held call',
    description: 'Waits for a human to decide a call the policy held for approval (the id comes from that call\'s result) and returns the call\'s result once it ran, or the refusal.',
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
};

/** The Airlock tools each MCP tool calls: it is offered only when the session's contract allows them all. */
export const AIRLOCK_TOOLS_CALLED: Record<AirlockToolName, readonly string[]> = {
  bash: ['exec'],
  read: ['files.read'],
  write: ['files.write'],
  edit: ['files.edit'],
  ls: ['files.list'],
  glob: ['exec'],
  grep: ['exec'],
  snapshot: ['snapshot'],
  fork: ['fork'],
  computer: COMPUTER_CALLS,
  await_approval: [],
};

/** A tool as `tools/list` shows it. */
export interface ListedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  outputSchema: { type: 'object'; [key: string]: unknown };
  annotations: ToolAnnotations;
}

/**
 * The tools as `tools/list` shows them (JSON Schema 2020-12 from the zod
 * schemas, with the schema of their structured content): those whose
 * Airlock tools the contract allows, so that a model is never offered a tool
 * every call of which would be denied.
 */
export function listedTools(allowed: ReadonlySet<string>): ListedTool[] {
  const offered = (Object.keys(TOOL_ARGUMENTS) as AirlockToolName[]).filter((name) => AIRLOCK_TOOLS_CALLED[name].every((tool) => allowed.has(tool)));
  return offered.map((name) => {
    const { title, description, annotations } = TOOL_DESCRIPTIONS[name];
    const inputSchema = z.toJSONSchema(TOOL_ARGUMENTS[name], { io: 'input' }) as { type: 'object'; [key: string]: unknown };
    return { name, title, description, inputSchema, outputSchema: outputSchemaOf(name), annotations: { title, ...annotations } };
  });
}
