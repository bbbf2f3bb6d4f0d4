/**
 * Argument schemas of every tool. Validation is the pipeline's first step:
 * a call whose arguments do not match never reaches anything else, and the
 * error names the field.
 */
import { z } from 'zod';
import { AirlockError } from './errors.js';
import type { ToolName } from './tool-call.js';

const path = z.string().min(1, 'path must not be empty').max(4096);
const encoding = z.enum(['utf8', 'base64']).default('utf8');
const MAX_TIMEOUT_MS = 24 * 3600 * 1000;

/** Arguments of `exec`. Exactly one of `command` (a shell string) or `argv`. */
export const execArguments = z
  .strictObject({
    command: z.string().min(1).max(256 * 1024).optional(),
    argv: z.array(z.string().max(256 * 1024)).min(1).max(4096).optional(),
    cwd: z.string().min(1).max(4096).default('/workspace'),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment names are letters, digits and _'), z.string()).default({}),
    stdin: z.string().optional(),
    stdinEncoding: encoding,
    timeoutMs: z.number().int().positive().max(MAX_TIMEOUT_MS).default(120_000),
    /** run in a fresh sandbox over the session disk instead of the session machine */
    ephemeral: z.boolean().default(false),
    /** start the command on the session machine and answer at once with its pid; it keeps running */
    detach: z.boolean().default(false),
  })
  .refine((value) => (value.command === undefined) !== (value.argv === undefined), {
    message: 'give exactly one of `command` (a shell string) or `argv` (a list)',
    path: ['command'],
  });

/** Arguments of `files.read`. */
export const readArguments = z.strictObject({
  path,
  encoding,
  maxBytes: z.number().int().positive().max(64 * 1024 * 1024).default(10 * 1024 * 1024),
});

/** Arguments of `files.write`. */
export const writeArguments = z.strictObject({
  path,
  content: z.string(),
  encoding,
  createParents: z.boolean().default(true),
});

/** Arguments of `files.edit` (exact string replacement). */
export const editArguments = z.strictObject({
  path,
  oldString: z.string().min(1, 'oldString must not be empty'),
  newString: z.string(),
  replaceAll: z.boolean().default(false),
});

/** Arguments of `files.list`. */
export const listArguments = z.strictObject({ path: path.default('/workspace') });
/** Arguments of `files.stat`. */
export const statArguments = z.strictObject({ path });
/** Arguments of `files.remove`. */
export const removeArguments = z.strictObject({ path, recursive: z.boolean().default(false) });
/** Arguments of `files.mkdir`. */
export const mkdirArguments = z.strictObject({ path });

/** Arguments of `snapshot`: memory, processes and disk of the session now, kept as a named artifact. */
export const snapshotArguments = z.strictObject({
  name: z.string().min(1).max(128).regex(/^\P{Cc}+$/u, 'expected no control characters').optional(),
});
/** Arguments of `fork`: `count` independent branches of the session now, or of one of its snapshots. */
export const forkArguments = z.strictObject({
  count: z.number().int('count must be a whole number').min(1),
  snapshotId: z.string().min(1).max(128).optional(),
});

/** The schema of each tool. */
export const TOOL_SCHEMAS = {
  exec: execArguments,
  'files.read': readArguments,
  'files.write': writeArguments,
  'files.edit': editArguments,
  'files.list': listArguments,
  'files.stat': statArguments,
  'files.remove': removeArguments,
  'files.mkdir': mkdirArguments,
  snapshot: snapshotArguments,
  fork: forkArguments,
} as const satisfies Record<ToolName, z.ZodType>;

/** Parsed arguments of a tool. */
export type ToolArguments<T extends ToolName> = z.output<(typeof TOOL_SCHEMAS)[T]>;

/** Validates arguments; throws INVALID_ARGUMENTS naming every bad field. */
export function validateArguments<T extends ToolName>(tool: T, input: unknown): ToolArguments<T> {
  const result = TOOL_SCHEMAS[tool].safeParse(input ?? {});
  if (result.success) return result.data as ToolArguments<T>;
  const errors = result.error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.join('.') : '(arguments)',
    message: issue.message,
  }));
  const summary = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  throw new AirlockError('INVALID_ARGUMENTS', `invalid arguments for ${tool}: ${summary}`, {
    details: { tool, errors, field: errors[0]?.field },
  });
}

/** Decodes a string argument in the given encoding. */
export function decodeContent(content: string, contentEncoding: 'utf8' | 'base64'): Buffer {
  return contentEncoding === 'base64' ? Buffer.from(content, 'base64') : Buffer.from(content, 'utf8');
}
