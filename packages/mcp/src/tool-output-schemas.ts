/**
 * What each tool's `structuredContent` looks like, declared as its
 * `outputSchema` (the specification: a tool that returns structured content
 * declares its schema, and clients validate against it). Every tool can also
 * come back refused or held for a human, so each schema is "the tool's own
 * result, or a refusal, or a pending approval". Objects are open (they may
 * gain fields); `$schema` is left out so that draft-07 validators (the
 * default dialect before 2025-11-25) read the same schema.
 */
import { z } from 'zod';
import type { AirlockToolName } from './tool-definitions.js';

/** Structured content of a refused call (policy, human, bad arguments, failed search). */
export const refusalOutput = z.looseObject({
  status: z.literal('refused'),
  code: z.string().describe('stable error code, e.g. POLICY_DENIED or INVALID_ARGUMENTS'),
  message: z.string(),
  policyIds: z.array(z.string()).describe('the policies that decided'),
  reason: z.string().optional().describe("the policy's reason"),
});

/** Structured content of a call held for a human. */
export const pendingOutput = z.looseObject({
  status: z.literal('pending-approval'),
  approvalId: z.string(),
  reason: z.string().optional(),
});

const commandOutput = z.looseObject({ exitCode: z.number(), stdout: z.string(), stderr: z.string(), timedOut: z.boolean() });
const readOutput = z.looseObject({
  path: z.string(),
  firstLine: z.number().optional(),
  lastLine: z.number().optional(),
  totalLines: z.number().optional(),
  lines: z.number().optional().describe('line count, when no lines were shown'),
  binary: z.boolean().optional(),
});
const writeOutput = z.looseObject({ path: z.string(), bytes: z.number() });
const editOutput = z.looseObject({ path: z.string(), replacements: z.number() });
const listOutput = z.looseObject({
  path: z.string(),
  entries: z.array(z.looseObject({ name: z.string(), type: z.string(), size: z.number(), target: z.string().optional() })),
});
const globOutput = z.looseObject({ matches: z.array(z.string()), total: z.number().optional() });
const grepOutput = z.looseObject({ matches: z.number().describe('number of matching lines') });
const snapshotOutput = z.looseObject({
  snapshotId: z.string(),
  name: z.string().nullable().optional(),
  contents: z.array(z.string()).optional(),
  sizeBytes: z.number(),
});
const forkOutput = z.looseObject({
  snapshotId: z.string(),
  branches: z.array(
    z.looseObject({
      index: z.number(),
      sessionId: z.string().nullable(),
      state: z.string().optional(),
      error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
    }),
  ),
});

/** A screenshot's size, or where the pointer is (cursor_position). */
const computerOutput = z.union([z.looseObject({ width: z.number(), height: z.number() }), z.looseObject({ x: z.number(), y: z.number() })]);
/** A desktop action released by a human, as await_approval returns it. */
const desktopActOutput = z.looseObject({ action: z.string(), pointer: z.looseObject({ x: z.number(), y: z.number() }).optional() });

const OWN_OUTPUT = {
  bash: commandOutput,
  read: readOutput,
  write: writeOutput,
  edit: editOutput,
  ls: listOutput,
  glob: globOutput,
  grep: grepOutput,
  snapshot: snapshotOutput,
  fork: forkOutput,
  computer: computerOutput,
  // The held call's own result, whichever tool it was.
  await_approval: z.union([commandOutput, readOutput, writeOutput, editOutput, listOutput, globOutput, grepOutput, snapshotOutput, forkOutput, computerOutput, desktopActOutput]),
} as const satisfies Record<AirlockToolName, z.ZodType>;

/** The schema of a tool's structured content: its own result, a refusal, or a pending approval. */
export function toolOutput(tool: AirlockToolName): z.ZodType {
  return z.union([OWN_OUTPUT[tool], refusalOutput, pendingOutput]);
}

/** A tool's `outputSchema` as `tools/list` shows it. */
export function outputSchemaOf(tool: AirlockToolName): { type: 'object'; [key: string]: unknown } {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(toolOutput(tool), { io: 'output' }) as Record<string, unknown>;
  return { type: 'object', ...schema };
}
