/**
 * The words Cedar policies are written in: entity types, actions and the
 * context every request carries. Published for humans in
 * docs/policy-vocabulary.md; keep the two in step.
 */

// The tools are defined once, by the core; the policy layer speaks the same names.
import { TOOL_NAMES, type ToolName } from '../core/tool-call.js';

export { TOOL_NAMES, type ToolName };

/** True when `value` names a tool. */
export function isToolName(value: unknown): value is ToolName {
  return typeof value === 'string' && (TOOL_NAMES as readonly string[]).includes(value);
}

/** Cedar entity type of the agent that makes a call. */
export const PRINCIPAL_TYPE = 'Airlock::Agent';
/** Cedar entity type of the session a call runs in. */
export const RESOURCE_TYPE = 'Airlock::Session';
/** Cedar entity type of actions. */
export const ACTION_TYPE = 'Airlock::Action';

/**
 * Every Cedar action policies may name: the tools, and `net.connect`, which
 * the egress gateway asks for every connection a sandbox opens.
 */
export const CEDAR_ACTIONS: readonly string[] = [...TOOL_NAMES, 'net.connect'];

/** The context of every request, with the Cedar type of each value. */
export interface CedarRequestContext {
  /** the tool called, same as the action id */
  tool: string;
  /** raw command string of `exec`; "" when argv was given or for other tools */
  command: string;
  /** basenames of every program the command would run (Cedar Set<String>) */
  programs: string[];
  /** argv of `exec` when given as a list (a Cedar Set<String>: order is lost) */
  argv: string[];
  /** canonical absolute path of a files.* call; "" when none */
  path: string;
  /** working directory of the call; "" when none */
  cwd: string;
  tenant: string;
  /** number of tool calls made in this session before this one (Long) */
  callCount: number;
  /** consecutive identical failing calls just before this one (Long) */
  identicalFailures: number;
  /** false when the command could not be analysed statically */
  analysable: boolean;
  /** destination name of `net.connect` (lower case); "" for tools */
  host: string;
  /** destination port of `net.connect` (Long); 0 for tools */
  port: number;
  /** branches a `fork` asks for (Long); 0 for other tools */
  branches: number;
  /**
   * the environment an `exec` sets, as the `Airlock::Environment` entity whose tags are the names
   * and values (`context.env.hasTag("PATH")`, `context.env.getTag("PATH")`); no tags for other tools
   */
  env: { __entity: { type: string; id: string } };
  /** kind of a `desktop.act` (`click`, `type`, ...), `screenshot` for `desktop.screenshot`; "" otherwise */
  desktopAction: string;
  /** the point a desktop action acts on (a drag's start), in screen pixels (Long); 0 otherwise */
  x: number;
  y: number;
  /** the end of a drag (Long); 0 otherwise */
  toX: number;
  toY: number;
  /** the text a `type` action types, or the keys a `key` action presses; "" otherwise */
  text: string;
  /** title of the window that has the focus just before a desktop call; "" otherwise */
  windowTitle: string;
}

/** Cedar entity type whose tags carry a call's environment (Cedar records cannot have open keys; tags can). */
export const ENVIRONMENT_TYPE = 'Airlock::Environment';
/** The id of the one environment entity each request carries. */
export const ENVIRONMENT_ID = 'call';

/** The Cedar schema policies are validated against when a contract is parsed. */
export const CEDAR_SCHEMA = `namespace Airlock {
  entity Agent;
  entity Session;
  entity Environment tags String;
  type RequestContext = {
    tool: String,
    command: String,
    programs: Set<String>,
    argv: Set<String>,
    path: String,
    cwd: String,
    tenant: String,
    callCount: Long,
    identicalFailures: Long,
    analysable: Bool,
    host: String,
    port: Long,
    branches: Long,
    env: Environment,
    desktopAction: String,
    x: Long,
    y: Long,
    toX: Long,
    toY: Long,
    text: String,
    windowTitle: String,
  };
  action ${CEDAR_ACTIONS.map((name) => JSON.stringify(name)).join(', ')}
    appliesTo { principal: [Agent], resource: [Session], context: RequestContext };
}
`;
