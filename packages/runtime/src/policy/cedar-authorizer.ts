/**
 * Cedar authorization of one tool call: the contract's policies are compiled
 * once into the wasm engine, then each call costs one `statefulIsAuthorized`.
 * Three outcomes: a matching forbid denies; else a matching permit annotated
 * `@approval("required")` asks a human; else any matching permit allows; else
 * deny. Errors deny too (fail closed).
 */
import { createHash } from 'node:crypto';
import { preparsePolicySet, statefulIsAuthorized, type AuthorizationAnswer } from '@cedar-policy/cedar-wasm/nodejs';
import { checkPolicySources, type CheckedPolicy } from './cedar-policy-text.js';
import { invalidContract } from './contract-issues.js';
import { isCanonicalPath } from './filesystem-policy.js';
import {
  ACTION_TYPE,
  ENVIRONMENT_ID,
  ENVIRONMENT_TYPE,
  PRINCIPAL_TYPE,
  RESOURCE_TYPE,
  isToolName,
  type CedarRequestContext,
  type ToolName,
} from './policy-vocabulary.js';
import type { EnforcementMode, SessionContract } from './session-contract.js';
import { NO_DESKTOP_CONTEXT, type DesktopContext, type PolicyDecision } from '../core/authorizer.js';
import { analyzeCommand, type CommandAnalysis } from './shell-analysis.js';

/** One tool call to authorize. Tenant and principal come from the contract. */
export interface AuthorizationRequest {
  sessionId: string;
  tool: ToolName;
  /** shell command of `exec` */
  command?: string;
  /** argv of `exec`; wins over `command` */
  argv?: readonly string[];
  /** canonical absolute path of a files.* call (symlinks resolved) */
  path?: string;
  cwd?: string;
  /** tool calls made in this session before this one */
  callCount?: number;
  /** consecutive identical failing calls just before this one */
  identicalFailures?: number;
  /** branches a `fork` asks for */
  branches?: number;
  /** environment an `exec` sets */
  env?: Readonly<Record<string, string>>;
  /** what a `desktop.*` call does and the focused window's title */
  desktop?: DesktopContext;
  /** analysis of the command, when the caller already has it; otherwise computed here */
  analysis?: CommandAnalysis;
}

/** The outcome of authorization (defined by the core's Authorizer port). */
export type { PolicyDecision };

// Preparsed sets live in the wasm module for the life of the process and
// cannot be dropped, so they are named by content: equal policies share one.
const preparsedSets = new Set<string>();
const compiledContracts = new WeakMap<SessionContract, CedarPolicySet>();

/** The Cedar policies of one contract, compiled once. */
export class CedarPolicySet {
  /** ids of the policies, in contract order */
  readonly policyIds: readonly string[];
  readonly #setId: string;
  readonly #policies: ReadonlyMap<string, CheckedPolicy>;
  readonly #principal: { type: string; id: string };
  readonly #tenant: string;
  readonly #enforcement: EnforcementMode;

  /** The compiled set of a contract, compiling it on first use. */
  static forContract(contract: SessionContract): CedarPolicySet {
    let set = compiledContracts.get(contract);
    if (set === undefined) {
      set = new CedarPolicySet(contract);
      compiledContracts.set(contract, set);
    }
    return set;
  }

  /** Compiles the contract's policies; throws INVALID_CONTRACT if they do not parse. */
  constructor(contract: SessionContract) {
    const sources = contract.policies.map((policy, index) => ({ index, id: policy.id, text: policy.text }));
    const checked = checkPolicySources(sources, false);
    if (checked.issues.length > 0) throw invalidContract(checked.issues);
    const staticPolicies = Object.fromEntries(checked.policies.map((policy) => [policy.id, policy.text]));
    this.#setId = `airlock-${createHash('sha256').update(JSON.stringify(staticPolicies)).digest('hex').slice(0, 32)}`;
    if (!preparsedSets.has(this.#setId)) {
      const answer = preparsePolicySet(this.#setId, { staticPolicies });
      if (answer.type === 'failure') {
        throw invalidContract(answer.errors.map((error) => ({ path: 'policies', message: error.message })));
      }
      preparsedSets.add(this.#setId);
    }
    this.#policies = new Map(checked.policies.map((policy) => [policy.id, policy]));
    this.policyIds = checked.policies.map((policy) => policy.id);
    this.#principal = { type: PRINCIPAL_TYPE, id: contract.identity.principal };
    this.#tenant = contract.identity.tenant;
    this.#enforcement = contract.enforcement;
  }

  /** Decides one call. Never throws: an error becomes a deny that records it. */
  authorize(request: AuthorizationRequest): PolicyDecision {
    const enforced = this.#enforcement === 'enforce';
    let described: Described;
    let answer: AuthorizationAnswer;
    try {
      described = this.#contextOf(request);
      const { context } = described;
      answer = statefulIsAuthorized({
        principal: this.#principal,
        action: { type: ACTION_TYPE, id: request.tool },
        resource: { type: RESOURCE_TYPE, id: request.sessionId },
        context: { ...context },
        entities: [environmentEntity(request.tool === 'exec' ? (request.env ?? {}) : {})],
        preparsedPolicySetId: this.#setId,
      });
    } catch (error) {
      return failClosed(request.tool, [], [`request: ${(error as Error).message}`], enforced);
    }
    if (answer.type === 'failure') {
      return failClosed(request.tool, [], answer.errors.map((error) => `cedar: ${error.message}`), enforced);
    }
    const { decision, diagnostics } = answer.response;
    const errors = diagnostics.errors.map((error) => `${error.policyId}: ${error.error.message}`);
    const matched = diagnostics.reason;
    const forbids = matched.filter((id) => this.#policies.get(id)?.effect === 'forbid');
    if (forbids.length > 0) return this.#decide('deny', forbids, described, errors, enforced);
    if (errors.length > 0) {
      return failClosed(request.tool, diagnostics.errors.map((error) => error.policyId), errors, enforced);
    }
    if (decision === 'deny' || matched.length === 0) return this.#decide('deny', [], described, errors, enforced);
    const approvals = matched.filter((id) => this.#policies.get(id)?.approval === true);
    if (approvals.length > 0) return this.#decide('ask', approvals, described, errors, enforced);
    return this.#decide('allow', matched, described, errors, enforced);
  }

  /**
   * Decides one network connection of the sandbox (action `net.connect`,
   * context `host` and `port`). Never throws; errors deny.
   */
  authorizeConnection(request: { sessionId: string; host: string; port: number; callCount?: number }): PolicyDecision {
    const enforced = this.#enforcement === 'enforce';
    const context: CedarRequestContext = {
      tool: 'net.connect',
      command: '',
      programs: [],
      argv: [],
      path: '',
      cwd: '',
      tenant: this.#tenant,
      callCount: request.callCount ?? 0,
      identicalFailures: 0,
      analysable: true,
      host: request.host.toLowerCase(),
      port: request.port,
      branches: 0,
      env: ENVIRONMENT_REFERENCE,
      ...desktopKeys(NO_DESKTOP_CONTEXT),
    };
    let answer: AuthorizationAnswer;
    try {
      if (!Number.isInteger(request.port) || request.port < 0 || request.port > 65535) throw new Error(`port must be 0-65535, got ${request.port}`);
      answer = statefulIsAuthorized({
        principal: this.#principal,
        action: { type: ACTION_TYPE, id: 'net.connect' },
        resource: { type: RESOURCE_TYPE, id: request.sessionId },
        context: { ...context },
        entities: [environmentEntity({})],
        preparsedPolicySetId: this.#setId,
      });
    } catch (error) {
      return failClosed('net.connect', [], [`request: ${(error as Error).message}`], enforced);
    }
    if (answer.type === 'failure') return failClosed('net.connect', [], answer.errors.map((error) => `cedar: ${error.message}`), enforced);
    const { decision, diagnostics } = answer.response;
    const errors = diagnostics.errors.map((error) => `${error.policyId}: ${error.error.message}`);
    const matched = diagnostics.reason;
    const described: Described = { context, notes: [] };
    const forbids = matched.filter((id) => this.#policies.get(id)?.effect === 'forbid');
    if (forbids.length > 0) return this.#decide('deny', forbids, described, errors, enforced);
    if (errors.length > 0) return failClosed('net.connect', diagnostics.errors.map((error) => error.policyId), errors, enforced);
    if (decision === 'deny' || matched.length === 0) return this.#decide('deny', [], described, errors, enforced);
    const approvals = matched.filter((id) => this.#policies.get(id)?.approval === true);
    if (approvals.length > 0) return this.#decide('ask', approvals, described, errors, enforced);
    return this.#decide('allow', matched, described, errors, enforced);
  }

  #contextOf(request: AuthorizationRequest): Described {
    if (!isToolName(request.tool)) throw new Error(`unknown tool ${JSON.stringify(request.tool)}`);
    const path = request.path ?? '';
    if (path !== '' && !isCanonicalPath(path)) {
      throw new Error(`path "${path}" is not canonical; resolve it to an absolute path without "." or ".." first`);
    }
    const exec = request.tool === 'exec';
    const argv = exec && request.argv !== undefined ? [...request.argv] : [];
    const command = exec && request.argv === undefined ? (request.command ?? '') : '';
    const analysis = !exec
      ? { programs: [], analysable: true, reasons: [] }
      : (request.analysis ?? analyzeCommand(request.argv !== undefined ? { argv } : { command }));
    const context: CedarRequestContext = {
      tool: request.tool,
      command,
      programs: [...analysis.programs],
      argv,
      path,
      cwd: request.cwd ?? '',
      tenant: this.#tenant,
      callCount: long('callCount', request.callCount),
      identicalFailures: long('identicalFailures', request.identicalFailures),
      analysable: analysis.analysable,
      host: '',
      port: 0,
      branches: request.tool === 'fork' ? long('branches', request.branches) : 0,
      env: ENVIRONMENT_REFERENCE,
      ...desktopKeys(request.tool.startsWith('desktop.') ? (request.desktop ?? NO_DESKTOP_CONTEXT) : NO_DESKTOP_CONTEXT),
    };
    return { context, notes: analysis.reasons };
  }

  #decide(
    decision: PolicyDecision['decision'],
    policyIds: string[],
    { context, notes }: Described,
    errors: string[],
    enforced: boolean,
  ): PolicyDecision {
    const deciding = policyIds.flatMap((id) => this.#policies.get(id) ?? []);
    const custom = deciding.find((policy) => policy.reason !== undefined)?.reason;
    const subject = describe(context, notes, new Set(deciding.flatMap((policy) => policy.literals)));
    const names = policyIds.length === 1 ? `policy ${policyIds[0]}` : `policies ${policyIds.join(', ')}`;
    const plural = policyIds.length > 1;
    const sentence =
      policyIds.length === 0
        ? `no policy permits ${context.tool}: ${subject}`
        : decision === 'deny'
          ? `${names} ${plural ? 'forbid' : 'forbids'} ${context.tool}: ${subject}`
          : decision === 'ask'
            ? `${names} ${plural ? 'require' : 'requires'} approval for ${context.tool}: ${subject}`
            : `${names} ${plural ? 'permit' : 'permits'} ${context.tool}: ${subject}`;
    return { decision, policyIds, reason: custom ?? sentence, errors, enforced };
  }
}

/** The context sent to Cedar and the analysis notes used to explain the decision. */
interface Described {
  context: CedarRequestContext;
  notes: readonly string[];
}

/** How the context names the request's environment entity. */
const ENVIRONMENT_REFERENCE = { __entity: { type: ENVIRONMENT_TYPE, id: ENVIRONMENT_ID } };

/** The environment entity of one request: its tags are the variables the call sets. */
function environmentEntity(env: Readonly<Record<string, string>>): { uid: { type: string; id: string }; attrs: Record<string, never>; parents: never[]; tags: Record<string, string> } {
  return { uid: { type: ENVIRONMENT_TYPE, id: ENVIRONMENT_ID }, attrs: {}, parents: [], tags: { ...env } };
}

/** The desktop keys of a request's context. */
function desktopKeys(desktop: DesktopContext): Pick<CedarRequestContext, 'desktopAction' | 'x' | 'y' | 'toX' | 'toY' | 'text' | 'windowTitle'> {
  return {
    desktopAction: desktop.action,
    x: long('x', desktop.x),
    y: long('y', desktop.y),
    toX: long('toX', desktop.toX),
    toY: long('toY', desktop.toY),
    text: desktop.text,
    windowTitle: desktop.windowTitle,
  };
}

function failClosed(tool: string, policyIds: string[], errors: string[], enforced: boolean): PolicyDecision {
  const first = errors[0] ?? 'unknown error';
  return {
    decision: 'deny',
    policyIds: [...new Set(policyIds)],
    reason: `${tool} denied because policy evaluation failed (${first}); policies fail closed`,
    errors,
    enforced,
  };
}

function long(name: string, value: number | undefined): number {
  if (value === undefined) return 0;
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${value}`);
  return value;
}

// Names the programs the deciding policies mention ("command runs rm"), or all of them.
function describe(context: CedarRequestContext, notes: readonly string[], literals: ReadonlySet<string>): string {
  if (context.tool === 'net.connect') return `connection to ${context.host}:${context.port}`;
  if (context.tool === 'fork') return `${context.branches} branch${context.branches === 1 ? '' : 'es'}`;
  if (context.tool === 'snapshot') return 'the whole session';
  if (context.tool === 'desktop.screenshot') return `a screenshot${context.windowTitle === '' ? '' : ` of window "${context.windowTitle}"`}`;
  if (context.tool === 'desktop.act') {
    const pointed = ['click', 'double_click', 'right_click', 'move', 'drag', 'scroll'].includes(context.desktopAction);
    const where = pointed ? ` at (${context.x}, ${context.y})` : '';
    return `${context.desktopAction}${where}${context.windowTitle === '' ? '' : ` in window "${context.windowTitle}"`}`;
  }
  if (context.tool !== 'exec') return context.path === '' ? 'no path' : `path ${context.path}`;
  const named = context.programs.filter((program) => literals.has(program));
  if (named.length > 0) return `command runs ${named.join(', ')}`;
  if (!context.analysable) return `the command could not be analysed statically (${notes[0] ?? 'no reason given'})`;
  if (context.programs.length === 0) return 'the command runs no program';
  const shown = context.programs.slice(0, 6).join(', ');
  return `command runs ${shown}${context.programs.length > 6 ? ` and ${context.programs.length - 6} more` : ''}`;
}
