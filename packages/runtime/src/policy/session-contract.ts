/**
 * The session contract: what one agent session may do and with what
 * resources, written by a human in JSON or YAML. Parsing is strict (unknown
 * keys are errors) and reports every problem at once; the result is frozen and
 * self-contained (policy files are inlined), so it can be stored and re-parsed.
 */
import { z } from 'zod';
import { normalizeAbsolutePath } from './filesystem-policy.js';
import { TOOL_NAMES } from './policy-vocabulary.js';
import { SANDBOX_KINDS, type ContractPolicy, type SessionContract } from '../core/session-contract.js';

/** Sandbox drivers a contract may ask for (the values live in the core, with the contract's type). */
export { SANDBOX_KINDS };
import { issuesFromZod, invalidContract } from './contract-issues.js';
import { resolveContractPolicies, type PolicyFileOptions } from './contract-policies.js';
import { decodeContractText } from './contract-text.js';

/** The contract's types live in the core, which stores and reads contracts with them. */
export type {
  ContractBudgets,
  ContractCredential,
  ContractDesktop,
  ContractExec,
  ContractIdentity,
  ContractIdle,
  ContractNetwork,
  ContractPerCall,
  ContractPolicy,
  ContractResources,
  EnforcementMode,
  SandboxKind,
  SessionContract,
} from '../core/session-contract.js';

/** Policy of a contract that has no `policies` key. */
export const PERMIT_ALL_POLICY: ContractPolicy = Object.freeze({
  id: 'default-permit-all',
  text: 'permit(principal, action, resource);',
});

/** Most policy entries a contract may hold. */
export const MAX_POLICIES = 1000;

const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/, 'expected 1-128 letters, digits or . _ : @ - (starting with a letter or digit)');
const text = (max: number) => z.string().min(1).max(max);
const int = (min: number, max: number) => z.number().int().min(min).max(max);

const absolutePrefix = z.string().max(4096).transform((value, context) => {
  const normalized = normalizeAbsolutePath(value);
  if (normalized === undefined) {
    context.addIssue({ code: 'custom', message: `expected an absolute path starting with "/", got "${value}"` });
    return z.NEVER;
  }
  return normalized;
});
const prefixes = z.array(absolutePrefix).max(256).transform((list) => [...new Set(list)]);

// `example.com`, `*.example.com`, optionally `:443`; no scheme, path or bare `*`.
const DOMAIN_PATTERN =
  /^(\*\.)?(?=.{1,253}(:|$))([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:([1-9][0-9]{0,4}))?$/;
const domain = z
  .string()
  .transform((value) => value.toLowerCase())
  .refine((value) => DOMAIN_PATTERN.test(value) && portInRange(value), {
    message: 'expected a domain such as "example.com" or "*.example.com", optionally with ":port"',
  });

function portInRange(value: string): boolean {
  const port = /:(\d+)$/.exec(value)?.[1];
  return port === undefined || Number(port) <= 65535;
}

const credential = z.strictObject({
  secret: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'expected a secret name: letters, digits and _ (not starting with a digit)'),
  hosts: z.array(domain).min(1).max(100),
  header: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'expected an HTTP header name such as "Authorization"'),
  format: z
    .string()
    .max(1000)
    .refine((value) => value.includes('{secret}') && !/[\r\n\0]/.test(value), { message: 'must contain {secret} and no line breaks, e.g. "Bearer {secret}"' }),
  env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'expected an environment variable name').optional(),
});

/** The zod schema of a contract as written; policy entries are checked by the loader. */
export const sessionContractSchema = z.strictObject({
  version: z.literal(1),
  identity: z
    .strictObject({
      tenant: name.default('default'),
      principal: name.default('agent'),
      agent: text(200).optional(),
      objective: text(4000).optional(),
      task: text(20000).optional(),
    })
    .prefault({}),
  tools: z
    .array(z.enum(TOOL_NAMES))
    .transform((list) => [...new Set(list)])
    .default([...TOOL_NAMES]),
  filesystem: z
    .strictObject({
      readOnly: prefixes.default([]),
      denyRead: prefixes.default([]),
      denyWrite: prefixes.default([]),
      allowWrite: prefixes.optional(),
    })
    .prefault({}),
  exec: z
    .strictObject({
      allowEnv: z
        .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'expected an environment variable name'))
        .max(256)
        .transform((list) => [...new Set(list)])
        .default([]),
    })
    .prefault({}),
  resources: z
    .strictObject({
      cpus: z.number().min(0.1).max(64).default(1),
      memoryMb: int(64, 262144).default(512),
      diskMb: int(64, 1048576).default(2048),
      maxProcesses: int(8, 65536).default(256),
      maxCpus: z.number().min(0.1).max(64).optional(),
      maxMemoryMb: int(64, 262144).optional(),
    })
    .prefault({})
    .superRefine((resources, context) => {
      if (resources.maxCpus !== undefined && resources.maxCpus < resources.cpus) {
        context.addIssue({ code: 'custom', path: ['maxCpus'], message: `must be at least cpus (${resources.cpus})` });
      }
      if (resources.maxMemoryMb !== undefined && resources.maxMemoryMb < resources.memoryMb) {
        context.addIssue({ code: 'custom', path: ['maxMemoryMb'], message: `must be at least memoryMb (${resources.memoryMb})` });
      }
    }),
  sandbox: z.enum(SANDBOX_KINDS).optional(),
  budgets: z
    .strictObject({
      maxToolCalls: int(1, 10_000_000).optional(),
      maxCpuSeconds: int(1, 31_536_000).optional(),
      maxWallSeconds: int(1, 31_536_000).optional(),
    })
    .prefault({}),
  guard: z.strictObject({ maxIdenticalFailures: int(1, 10_000).default(20) }).prefault({}),
  idle: z
    .strictObject({
      pauseAfterSeconds: int(1, 31_536_000).optional(),
      suspendAfterSeconds: int(1, 31_536_000).default(300),
      keepAwake: z.boolean().default(false),
    })
    .prefault({})
    .superRefine((idle, context) => {
      if (idle.pauseAfterSeconds !== undefined && idle.pauseAfterSeconds >= idle.suspendAfterSeconds) {
        context.addIssue({
          code: 'custom',
          path: ['pauseAfterSeconds'],
          message: `must be less than suspendAfterSeconds (${idle.suspendAfterSeconds})`,
        });
      }
    }),
  perCall: z.strictObject({ maxSeconds: int(1, 86_400).default(600) }).prefault({}),
  desktop: z.strictObject({ width: int(320, 7680).default(1280), height: int(200, 4320).default(800) }).prefault({}),
  retention: z.strictObject({ snapshotDays: int(1, 3650).optional() }).prefault({}),
  enforcement: z.enum(['enforce', 'log-only']).default('enforce'),
  policies: z.array(z.unknown()).max(MAX_POLICIES).optional(),
  network: z
    .strictObject({
      allowedDomains: z.array(domain).max(1000).optional(),
      deniedDomains: z.array(domain).max(1000).optional(),
    })
    .optional(),
  credentials: z.array(credential).max(100).optional(),
});

/** Where to read policy files from; without `baseDir`, `file` entries are refused. */
export type ContractParseOptions = PolicyFileOptions;

/** Validates a contract value (already decoded from JSON or YAML); throws INVALID_CONTRACT listing every error. */
export function parseContract(input: unknown, options: ContractParseOptions = {}): SessionContract {
  const parsed = sessionContractSchema.safeParse(input);
  const issues = parsed.success ? [] : issuesFromZod(parsed.error.issues, sessionContractSchema, input);
  const rawPolicies = isRecord(input) ? input['policies'] : undefined;
  // Past the schema's limit the list is already an error; do not compile thousands of policies to say so.
  const checkable = Array.isArray(rawPolicies) && rawPolicies.length <= MAX_POLICIES;
  const policies = checkable ? resolveContractPolicies(rawPolicies, options, issues) : undefined;
  if (parsed.success && parsed.data.credentials && parsed.data.credentials.length > 0 && !parsed.data.network) {
    issues.push({ path: 'credentials', message: 'credentials are used by the egress gateway: add a network section with allowedDomains covering their hosts' });
  }
  if (!parsed.success || issues.length > 0) throw invalidContract(issues);
  const contract = { ...parsed.data, policies: policies ?? [PERMIT_ALL_POLICY] };
  // The only cast: zod's output says `x?: T | undefined`; dropUndefined makes it `x?: T`.
  return deepFreeze(dropUndefined(contract)) as SessionContract;
}

/** Decodes JSON or YAML text (`auto`: JSON when it starts with `{`) and validates it like parseContract. */
export function parseContractText(
  text: string,
  format: 'json' | 'yaml' | 'auto',
  options: ContractParseOptions = {},
): SessionContract {
  return parseContract(decodeContractText(text, format), options);
}

/** The contract of a session created without one: every tool, default resources, everything permitted. */
export const DEFAULT_CONTRACT: SessionContract = parseContract({ version: 1 });

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function dropUndefined(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropUndefined);
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = dropUndefined(item);
  return out;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
