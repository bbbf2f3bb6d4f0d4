/**
 * The port between sessions and their network. A session whose contract
 * has a `network` section gets, for each sandbox, a namespace whose only
 * way out is the egress gateway; the session service asks this port for the
 * sandbox's network before every start and restore, and releases it when the
 * session ends. Implemented by `egress/session-egress.ts`.
 */
import type { SandboxNetwork } from './sandbox-driver.js';
import type { SessionRecord } from './session.js';

/** What a networked session's next sandbox gets. */
export interface SessionNetworkPlan {
  network: SandboxNetwork;
  /** environment added to the sandbox's (proxy settings, credential placeholders) */
  env: Record<string, string>;
}

/** Networks of sessions. */
export interface SessionNetworks {
  /** Opens the session's gateway (idempotent) and describes its sandbox network; undefined when the contract has no network. */
  prepare(session: SessionRecord, image: { rootfsDir: string }): Promise<SessionNetworkPlan | undefined>;
  /** Cuts the session's open connections so its sandbox can be checkpointed. */
  quiesce(sessionId: string): Promise<void>;
  /** Applies a new contract version at once (cuts connections it no longer allows). */
  policyChanged(sessionId: string): Promise<void>;
  /** Closes the session's gateway and deletes its network state (idempotent). */
  release(sessionId: string): Promise<void>;
}
