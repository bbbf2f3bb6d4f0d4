/**
 * The authorization port: decides allow / deny / ask for one tool call of a
 * session, deterministically, before anything runs. Implemented by the
 * policy layer (the contract's fast checks, then Cedar).
 */
import type { SessionRecord } from './session.js';
import type { ToolName } from './tool-call.js';

/** What a policy sees of a call (the published Cedar context, see docs/policy-vocabulary.md). */
export interface AuthorizationContext {
  tool: ToolName;
  command: string;
  programs: string[];
  argv: string[];
  analysable: boolean;
  analysisNotes: string[];
  path: string;
  cwd: string;
  tenant: string;
  callCount: number;
  identicalFailures: number;
  /** branches a `fork` asks for; 0 for other tools */
  branches: number;
  /** 'read' or 'write' for file tools: which filesystem list applies */
  access: 'read' | 'write' | 'none';
  /** environment the call sets for its command (`exec`); empty for other tools */
  env: Record<string, string>;
  /** what a `desktop.*` call does and what the screen shows; `NO_DESKTOP_CONTEXT` for other tools */
  desktop: DesktopContext;
}

/** The Cedar context of a desktop call (docs/policy-vocabulary.md). */
export interface DesktopContext {
  /** the kind of `desktop.act` (`click`, `type`, ...), `screenshot`, or "" */
  action: string;
  /** the point acted on (a drag's start); 0 when the action has none */
  x: number;
  y: number;
  /** a drag's end; 0 otherwise */
  toX: number;
  toY: number;
  /** the text typed, or the keys pressed; "" otherwise */
  text: string;
  /** title of the focused window just before the call; "" when no window has the focus */
  windowTitle: string;
}

/** The desktop context of calls that are not desktop calls. */
export const NO_DESKTOP_CONTEXT: DesktopContext = Object.freeze({ action: '', x: 0, y: 0, toX: 0, toY: 0, text: '', windowTitle: '' });

/** The outcome of authorization, carried as a value and audited. */
export interface PolicyDecision {
  decision: 'allow' | 'deny' | 'ask';
  /** ids of the policies that decided */
  policyIds: string[];
  /** a sentence the agent can read */
  reason: string;
  /** evaluation errors; any error makes the decision deny (fail closed) */
  errors: string[];
  /** false in log-only mode: recorded, not enforced */
  enforced: boolean;
}

/** Decides tool calls. */
export interface Authorizer {
  authorize(session: SessionRecord, context: AuthorizationContext): PolicyDecision;
}
