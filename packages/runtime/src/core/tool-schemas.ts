/**
 * Argument schemas of every tool. Validation is the pipeline's first step:
 * a call whose arguments do not match never reaches anything else, and the
 * error names the field.
 */
import { z } from 'zod';
import { AirlockError } from './errors.js';
import type { ToolName } from './tool-call.js';
import { desktopActArguments, desktopScreenshotArguments } from './desktop-action-schema.js';

/** Longest path a tool accepts, in bytes (Linux's PATH_MAX less its NUL). */
export const MAX_PATH_BYTES = 4095;
/** Longest single path component, in bytes (Linux's NAME_MAX). */
export const MAX_NAME_BYTES = 255;
/** Most components a path may have: deep enough for any real tree, shallow enough to resolve in bounded time. */
export const MAX_PATH_COMPONENTS = 512;

/** Checks the limits every path of a tool call obeys, naming the one exceeded. */
function checkPathLimits(value: string, context: z.RefinementCtx): void {
  if (value.includes('\0')) context.addIssue({ code: 'custom', message: 'path must not contain NUL bytes' });
  if (Buffer.byteLength(value) > MAX_PATH_BYTES) {
    context.addIssue({ code: 'custom', message: `path is ${Buffer.byteLength(value)} bytes, above the limit of ${MAX_PATH_BYTES}` });
    return;
  }
  const components = value.split('/').filter((part) => part !== '');
  const tooLong = components.find((part) => Buffer.byteLength(part) > MAX_NAME_BYTES);
  if (tooLong !== undefined) {
    context.addIssue({ code: 'custom', message: `path component "${tooLong.slice(0, 32)}…" is ${Buffer.byteLength(tooLong)} bytes, above the limit of ${MAX_NAME_BYTES} for one file name` });
  }
  if (components.length > MAX_PATH_COMPONENTS) {
    context.addIssue({ code: 'custom', message: `path has ${components.length} components, above the limit of ${MAX_PATH_COMPONENTS}` });
  }
}

const path = z.string().min(1, 'path must not be empty').superRefine(checkPathLimits);
const encoding = z.enum(['utf8', 'base64']).default('utf8');
const MAX_TIMEOUT_MS = 24 * 3600 * 1000;

/**
 * Longest single argument of a command, in bytes: Linux refuses a longer one with E2BIG
 * (MAX_ARG_STRLEN, 32 pages), and a shell command is one argument of `sh -c`.
 */
export const MAX_ARGUMENT_BYTES = 128 * 1024 - 1;
/** Most bytes all arguments and environment values of one command may hold together. */
export const MAX_COMMAND_BYTES = 1024 * 1024;

const argument = z.string().refine((value) => Buffer.byteLength(value) <= MAX_ARGUMENT_BYTES, {
  message: `one argument may hold at most ${MAX_ARGUMENT_BYTES} bytes (Linux's limit for a single argument); write longer scripts to a file and run the file`,
});

/** Arguments of `exec`. Exactly one of `command` (a shell string) or `argv`. */
export const execArguments = z
  .strictObject({
    command: argument.refine((value) => value.length > 0, 'command must not be empty').optional(),
    argv: z.array(argument).min(1).max(4096).optional(),
    cwd: z.string().min(1).superRefine(checkPathLimits).default('/workspace'),
    env: z
      .record(z.string(), argument)
      .superRefine((env, context) => {
        for (const name of Object.keys(env)) {
          if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) context.addIssue({ code: 'custom', message: `environment names are letters, digits and _ (got ${JSON.stringify(name.slice(0, 64))})`, path: [name] });
        }
      })
      .default({}),
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
  })
  .refine((value) => commandBytes(value) <= MAX_COMMAND_BYTES, {
    message: `the command's arguments and environment together may hold at most ${MAX_COMMAND_BYTES} bytes; pass data through stdin or a file instead`,
    path: ['argv'],
  });

/** Bytes the kernel needs for a command's arguments and environment. */
function commandBytes(value: { command?: string | undefined; argv?: string[] | undefined; env: Record<string, string> }): number {
  const words = value.command !== undefined ? [value.command] : (value.argv ?? []);
  const environment = Object.entries(value.env).map(([name, content]) => `${name}=${content}`);
  return [...words, ...environment].reduce((total, word) => total + Buffer.byteLength(word) + 1, 0);
}

/** Arguments of `files.read`. */
export const readArguments = z.strictObject({
  path,
  encoding,
  maxBytes: z.number().int().positive().max(64 * 1024 * 1024).default(10 * 1024 * 1024),
});

/** Standard or URL-safe base64, padded or not, whitespace allowed between groups. */
const BASE64 = /^[A-Za-z0-9+/\-_\s]*={0,2}\s*$/;

/** Arguments of `files.write`. */
export const writeArguments = z
  .strictObject({
    path,
    content: z.string(),
    encoding,
    createParents: z.boolean().default(true),
  })
  .refine((value) => value.encoding !== 'base64' || BASE64.test(value.content), {
    message: 'content is not valid base64; encode the bytes as base64 or send text with encoding "utf8"',
    path: ['content'],
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
  'desktop.screenshot': desktopScreenshotArguments,
  'desktop.act': desktopActArguments,
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
