/**
 * Turning everything wrong with a contract into one INVALID_CONTRACT error that
 * lists every problem with the path of the field at fault, so an author fixes
 * them all in one round instead of one per submission.
 */
import type { z } from 'zod';
import { AirlockError } from '../core/errors.js';

/** One problem in a contract: where (`guard.maxIdenticalFailures`, `policies[2]`) and what. */
export interface ContractIssue {
  path: string;
  message: string;
}

/** Formats a path such as ['policies', 2, 'file'] as `policies[2].file`; the root is "". */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** The error thrown for an invalid contract; `details.errors` holds every issue. */
export function invalidContract(issues: readonly ContractIssue[]): AirlockError {
  const lines = issues.map((issue) => `- ${issue.path === '' ? '(contract)' : issue.path}: ${issue.message}`);
  const count = issues.length === 1 ? '1 error' : `${issues.length} errors`;
  return new AirlockError(
    'INVALID_CONTRACT',
    `The session contract is invalid (${count}); fix these fields and submit it again:\n${lines.join('\n')}`,
    { details: { errors: issues.map((issue) => ({ path: issue.path, message: issue.message })) } },
  );
}

/** Translates zod issues on `input` into contract issues, one per unknown key, with short messages. */
export function issuesFromZod(issues: readonly z.core.$ZodIssue[], schema: z.ZodType, input: unknown): ContractIssue[] {
  const out: ContractIssue[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedKeysAt(schema, issue.path);
      const hint = allowed === undefined ? '' : ` (allowed: ${allowed.join(', ')})`;
      for (const key of issue.keys) {
        out.push({ path: formatIssuePath([...issue.path, key]), message: `unknown key${hint}` });
      }
      continue;
    }
    const message = shortMessage(issue);
    const missing = issue.path.length > 0 && !hasValueAt(input, issue.path);
    out.push({ path: formatIssuePath(issue.path), message: missing ? `required (${message})` : message });
  }
  return out;
}

function shortMessage(issue: z.core.$ZodIssue): string {
  const message = issue.message.replace(/^(Invalid (input|option)|Too (small|big)): /, '');
  if (issue.code === 'invalid_type' && message.endsWith('received undefined')) {
    return message.replace(/, received undefined$/, '');
  }
  if (issue.code === 'invalid_type' && issue.expected === 'int') return 'expected an integer';
  return message;
}

function hasValueAt(input: unknown, path: readonly PropertyKey[]): boolean {
  let current: unknown = input;
  for (const key of path) {
    if (typeof current !== 'object' || current === null || !(key in current)) return false;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current !== undefined;
}

interface SchemaDefinition {
  type?: string;
  shape?: Record<string, { _zod: { def: SchemaDefinition } }>;
  innerType?: { _zod: { def: SchemaDefinition } };
  in?: { _zod: { def: SchemaDefinition } };
  element?: { _zod: { def: SchemaDefinition } };
}

// Walks zod's definition tree (stable in zod 4) to name the keys an object accepts.
function allowedKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] | undefined {
  let def = unwrap((schema as unknown as { _zod: { def: SchemaDefinition } })._zod.def);
  for (const key of path) {
    const next =
      typeof key === 'number' ? def.element : typeof key === 'string' ? def.shape?.[key] : undefined;
    if (next === undefined) return undefined;
    def = unwrap(next._zod.def);
  }
  return def.type === 'object' && def.shape !== undefined ? Object.keys(def.shape) : undefined;
}

function unwrap(def: SchemaDefinition): SchemaDefinition {
  let current = def;
  for (let guard = 0; guard < 10; guard++) {
    const inner = current.innerType ?? current.in;
    if (inner === undefined) break;
    current = inner._zod.def;
  }
  return current;
}
