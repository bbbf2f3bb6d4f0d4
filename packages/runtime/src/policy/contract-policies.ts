/**
 * Resolving the `policies` entries of a contract: inline strings, `{ id, text }`
 * objects and `{ id, file }` references (read from disk only when the caller
 * says the contract is local), then checking them as Cedar.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { checkPolicySources, POLICY_ID_PATTERN, type PolicySource } from './cedar-policy-text.js';
import { issuesFromZod, type ContractIssue } from './contract-issues.js';

/** Largest policy text or policy file accepted, in bytes. */
export const MAX_POLICY_BYTES = 256 * 1024;

/** Where policy files are read from. */
export interface PolicyFileOptions {
  /**
   * Directory that relative `file` entries resolve against. Give it only for a
   * contract read from the local disk by its owner: without it `file` entries
   * are refused, so a contract sent over the API cannot read server files.
   */
  baseDir?: string;
}

/** The shape of a `policies` entry given as an object. */
export const policyEntryObjectSchema = z.strictObject({
  id: z.string().regex(POLICY_ID_PATTERN, 'expected 1-128 letters, digits or _ . : -').optional(),
  text: z.string().max(MAX_POLICY_BYTES).optional(),
  file: z.string().min(1).max(4096).optional(),
});

/** Turns raw entries into checked `{ id, text }` policies, appending every problem to `issues`. */
export function resolveContractPolicies(
  entries: readonly unknown[],
  options: PolicyFileOptions,
  issues: ContractIssue[],
): { id: string; text: string }[] {
  const sources: PolicySource[] = [];
  const found: ContractIssue[] = [];
  entries.forEach((entry, index) => {
    const source = toSource(entry, index, options, found);
    if (source !== undefined) sources.push(source);
  });
  const checked = checkPolicySources(sources);
  found.push(...checked.issues);
  // Entry problems and Cedar problems are found in two passes; report them in entry order.
  issues.push(...found.sort((a, b) => entryIndex(a.path) - entryIndex(b.path)));
  return checked.policies.map((policy) => ({ id: policy.id, text: policy.text }));
}

function entryIndex(path: string): number {
  return Number(/^policies\[(\d+)\]/.exec(path)?.[1] ?? Number.MAX_SAFE_INTEGER);
}

function toSource(
  entry: unknown,
  index: number,
  options: PolicyFileOptions,
  issues: ContractIssue[],
): PolicySource | undefined {
  const path = `policies[${index}]`;
  if (typeof entry === 'string') {
    if (entry.length > MAX_POLICY_BYTES) {
      issues.push({ path, message: `policy text is longer than ${MAX_POLICY_BYTES} characters` });
      return undefined;
    }
    return { index, text: entry };
  }
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    issues.push({ path, message: 'expected a Cedar policy string or an object with "text" or "file"' });
    return undefined;
  }
  const parsed = policyEntryObjectSchema.safeParse(entry);
  if (!parsed.success) {
    for (const issue of issuesFromZod(parsed.error.issues, policyEntryObjectSchema, entry)) {
      issues.push({ path: `${path}.${issue.path}`, message: issue.message });
    }
    return undefined;
  }
  const { id, text, file } = parsed.data;
  if ((text === undefined) === (file === undefined)) {
    issues.push({ path, message: 'give exactly one of "text" (inline Cedar) or "file" (a path to a .cedar file)' });
    return undefined;
  }
  const body = text ?? readPolicyFile(file ?? '', options, `${path}.file`, issues);
  if (body === undefined) return undefined;
  return id === undefined ? { index, text: body } : { index, id, text: body };
}

function readPolicyFile(
  file: string,
  options: PolicyFileOptions,
  path: string,
  issues: ContractIssue[],
): string | undefined {
  if (options.baseDir === undefined) {
    issues.push({
      path,
      message: 'policy files are only read for contracts loaded from disk; inline the policy as "text" instead',
    });
    return undefined;
  }
  const absolute = resolve(options.baseDir, file);
  try {
    const size = statSync(absolute).size;
    if (size > MAX_POLICY_BYTES) {
      issues.push({ path, message: `policy file "${absolute}" is larger than ${MAX_POLICY_BYTES} bytes` });
      return undefined;
    }
    return readFileSync(absolute, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : String(error);
    issues.push({ path, message: `cannot read policy file "${absolute}": ${why}` });
    return undefined;
  }
}
