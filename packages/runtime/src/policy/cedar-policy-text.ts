/**
 * Checking Cedar policy texts of a contract: syntax, ids, our annotations and
 * types against the vocabulary schema. Each problem names the contract entry
 * it came from (`policies[2]`), so an author can find it.
 */
import {
  policySetTextToParts,
  policyToJson,
  schemaToJson,
  validate,
  type DetailedError,
  type PolicyJson,
  type Schema,
} from '@cedar-policy/cedar-wasm/nodejs';
import type { ContractIssue } from './contract-issues.js';
import { CEDAR_SCHEMA } from './policy-vocabulary.js';
import { policyComplexityProblem } from './policy-complexity.js';

/** Ids given to policies: letters, digits and `_ . : -`. */
export const POLICY_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

/** One entry of a contract's `policies`, once its text is known. */
export interface PolicySource {
  /** position of the entry in `policies` */
  index: number;
  /** id given in the contract, if any */
  id?: string;
  /** Cedar text of the entry; may hold several policies */
  text: string;
}

/** One checked Cedar policy and what the authorizer needs to know about it. */
export interface CheckedPolicy {
  id: string;
  /** the text of this one policy */
  text: string;
  effect: 'permit' | 'forbid';
  annotations: Readonly<Record<string, string>>;
  /** a permit that needs a human's approval (`@approval("required")`) */
  approval: boolean;
  /** `@reason("...")`, shown to the agent instead of the generated sentence */
  reason?: string;
  /** string literals in the conditions, used to say which program a policy is about */
  literals: readonly string[];
  /** position of the contract entry this policy came from */
  index: number;
}

/** Policies that passed, and every problem found. */
export interface PolicyCheck {
  policies: CheckedPolicy[];
  issues: ContractIssue[];
}

/** Splits, parses and (unless `typecheck` is false) validates policy texts against the vocabulary. */
export function checkPolicySources(sources: readonly PolicySource[], typecheck = true): PolicyCheck {
  const policies: CheckedPolicy[] = [];
  const issues: ContractIssue[] = [];
  const owners = new Map<string, number>();
  for (const source of sources) {
    const parts = splitPolicies(source, issues);
    parts.forEach(({ text, json }, part) => {
      const checked = checkOne(source, text, json, part, parts.length, issues);
      if (checked === undefined) return;
      const owner = owners.get(checked.id);
      if (owner !== undefined) {
        issues.push({ path: `policies[${source.index}]`, message: `duplicate policy id "${checked.id}" (also used by policies[${owner}])` });
        return;
      }
      owners.set(checked.id, source.index);
      policies.push(checked);
    });
  }
  if (typecheck && policies.length > 0) issues.push(...typeErrors(policies));
  return { policies, issues };
}

// Most entries hold one policy: parse it directly, and split only when that fails.
function splitPolicies(source: PolicySource, issues: ContractIssue[]): { text: string; json: PolicyJson }[] {
  const path = `policies[${source.index}]`;
  const tooComplex = policyComplexityProblem(source.text);
  if (tooComplex !== undefined) {
    issues.push({ path, message: tooComplex });
    return [];
  }
  try {
    return parseParts(source, path, issues);
  } catch (error) {
    // Cedar recursed past the WebAssembly stack anyway: a policy error, never a server fault.
    if (!(error instanceof RangeError)) throw error;
    issues.push({ path, message: 'policy is too deeply nested for the Cedar parser; split it into several policies or flatten the condition' });
    return [];
  }
}

function parseParts(source: PolicySource, path: string, issues: ContractIssue[]): { text: string; json: PolicyJson }[] {
  const single = policyToJson(source.text);
  if (single.type === 'success') return [{ text: source.text, json: single.json }];
  const parts = policySetTextToParts(source.text);
  if (parts.type === 'failure') {
    for (const error of parts.errors) issues.push({ path, message: syntaxMessage(source.text, error) });
    return [];
  }
  if (parts.policy_templates.length > 0) {
    issues.push({ path, message: 'policy templates (?principal / ?resource slots) are not supported; name the entity' });
  }
  if (parts.policies.length === 0 && parts.policy_templates.length === 0) {
    issues.push({ path, message: 'contains no Cedar policy' });
  }
  return parts.policies.flatMap((text) => {
    const parsed = policyToJson(text);
    if (parsed.type === 'success') return [{ text, json: parsed.json }];
    for (const error of parsed.errors) issues.push({ path, message: syntaxMessage(text, error) });
    return [];
  });
}

function checkOne(
  source: PolicySource,
  text: string,
  json: PolicyJson,
  part: number,
  count: number,
  issues: ContractIssue[],
): CheckedPolicy | undefined {
  const path = `policies[${source.index}]`;
  const annotations: Record<string, string> = { ...(json.annotations ?? {}) };
  const effect = json.effect;
  const suffix = count > 1 ? `.${part}` : '';
  const id =
    source.id !== undefined ? source.id + suffix : (annotations['id'] ?? `policy${source.index}${suffix}`);
  if (!POLICY_ID_PATTERN.test(id)) {
    issues.push({ path, message: `policy id "${id}" must match ${POLICY_ID_PATTERN.source}` });
    return undefined;
  }
  const approvalValue = annotations['approval'];
  if (approvalValue !== undefined && approvalValue !== 'required') {
    issues.push({ path, message: `@approval must be "required", got "${approvalValue}"` });
  }
  const approval = approvalValue === 'required' || 'requireApproval' in annotations;
  if (approval && effect === 'forbid') {
    issues.push({ path, message: '@approval applies to permit policies only; a forbid always denies' });
  }
  const reason = annotations['reason'];
  return {
    id,
    text,
    effect,
    annotations,
    approval: approval && effect === 'permit',
    ...(reason === undefined ? {} : { reason }),
    literals: [...collectLiterals(json.conditions, new Set<string>())],
    index: source.index,
  };
}

function typeErrors(policies: readonly CheckedPolicy[]): ContractIssue[] {
  const byId = new Map(policies.map((policy) => [policy.id, policy]));
  const staticPolicies = Object.fromEntries(policies.map((policy) => [policy.id, policy.text]));
  const answer = validate({
    schema: vocabularySchema(),
    policies: { staticPolicies },
    validationSettings: { mode: 'strict' },
  });
  if (answer.type === 'failure') {
    return answer.errors.map((error) => ({ path: 'policies', message: detailed(error) }));
  }
  return answer.validationErrors.map((error) => {
    const policy = byId.get(error.policyId);
    const path = policy === undefined ? 'policies' : `policies[${policy.index}]`;
    const message = detailed(error.error).replace(/^for policy `[^`]*`, /, '');
    return { path, message: `${message} (policy ${error.policyId}; see docs/policy-vocabulary.md)` };
  });
}

let schemaJson: Schema | undefined;

// The JSON form validates about twice as fast as the text form; convert once.
function vocabularySchema(): Schema {
  if (schemaJson === undefined) {
    const converted = schemaToJson(CEDAR_SCHEMA);
    schemaJson = converted.type === 'success' ? converted.json : CEDAR_SCHEMA;
  }
  return schemaJson;
}

function syntaxMessage(text: string, error: DetailedError): string {
  const location = error.sourceLocations?.[0];
  const where = location === undefined ? '' : ` at ${lineAndColumn(text, location.start)}`;
  const label = location?.label ? `; ${location.label}` : '';
  return `Cedar syntax error${where}: ${detailed(error)}${label}`;
}

function detailed(error: DetailedError): string {
  return error.help ? `${error.message}; ${error.help}` : error.message;
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `line ${line}, column ${column}`;
}

// Literals in conditions ("rm" in `context.programs.contains("rm")`) let a
// reason name the program a policy is about instead of every program run.
function collectLiterals(node: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(node)) {
    for (const item of node) collectLiterals(item, into);
  } else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if ((key === 'Value' || key === 'Literal') && typeof value === 'string') into.add(value);
      else collectLiterals(value, into);
    }
  }
  return into;
}
