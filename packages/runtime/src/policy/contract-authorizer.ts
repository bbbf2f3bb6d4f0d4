/**
 * The authorizer the server uses: the contract's fast plain checks first
 * (tools allowed, filesystem rules on the canonical path), then the
 * contract's Cedar policies. Compiled once per session contract version.
 */
import type { Authorizer, AuthorizationContext, PolicyDecision } from '../core/authorizer.js';
import type { SessionRecord } from '../core/session.js';
import { isFileTool } from '../core/tool-call.js';
import { CedarPolicySet } from './cedar-authorizer.js';
import { FilesystemPolicy } from './filesystem-policy.js';
import { isCodeChangingEnvironment } from './code-changing-environment.js';
import { parseContract, type SessionContract } from './session-contract.js';

interface CompiledContract {
  contract: SessionContract;
  cedar: CedarPolicySet;
  filesystem: FilesystemPolicy;
}

const MAX_CACHED = 1024;

/** Authorizes tool calls against each session's contract. */
export class ContractAuthorizer implements Authorizer {
  /** by session and contract version: the per-call lookup */
  private readonly compiled = new Map<string, CompiledContract>();
  /** by the contract's content */
  private readonly byContent = new Map<string, CompiledContract>();

  authorize(session: SessionRecord, context: AuthorizationContext): PolicyDecision {
    const { contract, cedar, filesystem } = this.compile(session);
    const enforced = contract.enforcement === 'enforce';
    if (!contract.tools.includes(context.tool)) {
      return {
        decision: 'deny',
        policyIds: ['contract.tools'],
        reason: `the tool ${context.tool} is not in this session's contract (tools: ${contract.tools.join(', ')})`,
        errors: [],
        enforced,
      };
    }
    if (context.tool === 'exec') {
      const refused = Object.keys(context.env).filter((name) => isCodeChangingEnvironment(name) && !contract.exec.allowEnv.includes(name));
      if (refused.length > 0) {
        const names = refused.join(', ');
        return {
          decision: 'deny',
          policyIds: ['contract.exec.allowEnv'],
          reason: `the call sets ${names}, which ${refused.length === 1 ? 'changes' : 'change'} which code the command runs; the contract does not allow ${refused.length === 1 ? 'it' : 'them'} (add ${refused.length === 1 ? 'it' : 'them'} to exec.allowEnv, or leave ${refused.length === 1 ? 'it' : 'them'} out of env)`,
          errors: [],
          enforced,
        };
      }
    }
    if (isFileTool(context.tool)) {
      const checked = filesystem.checkTool(context.tool, context.path, { subtree: context.tool === 'files.remove' });
      if (checked.decision === 'deny') {
        return { decision: 'deny', policyIds: [`contract.filesystem.${checked.rule?.list ?? 'path'}`], reason: checked.reason, errors: [], enforced };
      }
    }
    return cedar.authorize({
      sessionId: session.id,
      tool: context.tool,
      ...(context.command !== '' ? { command: context.command } : { argv: context.argv }),
      path: context.path,
      cwd: context.cwd,
      env: context.env,
      callCount: context.callCount,
      identicalFailures: context.identicalFailures,
      branches: context.branches,
      desktop: context.desktop,
      analysis: { programs: context.programs, analysable: context.analysable, reasons: context.analysisNotes },
    });
  }

  /** Compiles a contract ahead of its sessions' first call (the server's default one, at start-up). */
  prepare(contract: SessionContract): void {
    this.compiledContent(contract);
  }

  /** Cedar's decision on a connection of the session's sandbox (action `net.connect`). */
  authorizeConnection(session: SessionRecord, host: string, port: number): PolicyDecision {
    const { cedar } = this.compile(session);
    return cedar.authorizeConnection({ sessionId: session.id, host, port, callCount: session.meters.toolCalls });
  }

  private compile(session: SessionRecord): CompiledContract {
    const key = `${session.id}#${session.contractVersion}`;
    let compiled = this.compiled.get(key);
    if (!compiled) {
      compiled = this.compiledContent(session.contract);
      remember(this.compiled, key, compiled);
    }
    return compiled;
  }

  /**
   * Sessions with the same contract (the default one, a fleet's template, fork branches) share one
   * compilation: it took 20-35 ms (measured under load), paid by every new session's first call.
   */
  private compiledContent(raw: SessionContract): CompiledContract {
    const content = JSON.stringify(raw);
    let compiled = this.byContent.get(content);
    if (!compiled) {
      const contract = parseContract(raw);
      compiled = { contract, cedar: CedarPolicySet.forContract(contract), filesystem: new FilesystemPolicy(contract.filesystem) };
      remember(this.byContent, content, compiled);
    }
    return compiled;
  }
}

/** Adds to a bounded cache, forgetting the oldest entry when it is full. */
function remember(cache: Map<string, CompiledContract>, key: string, compiled: CompiledContract): void {
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value ?? '');
  cache.set(key, compiled);
}
