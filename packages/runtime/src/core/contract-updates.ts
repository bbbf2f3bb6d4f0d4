/**
 * Changing a running session's contract: today its `network` section only
 * (the egress lists), e.g. to tighten what the agent may reach. The change
 * is a new contract version, audited as `contract.updated` with the lists
 * before and after, and applied to the gateway at once: connections the new
 * lists refuse are cut. Credentials, tools and policies stay as created; a
 * change of the `filesystem` lists is refused with the reason
 * (filesystem-rule-changes.ts), the same lists are accepted as a no-op.
 */
import { AirlockError } from './errors.js';
import { changedFilesystemLists, filesystemChangeRefused } from './filesystem-rule-changes.js';
import type { SessionNetworks } from './session-networks.js';
import type { SessionService } from './session-service.js';
import type { SessionRecord } from './session.js';
import type { SessionContract } from './session-contract.js';

/** Collaborators of ContractUpdates. */
export interface ContractUpdatesDeps {
  sessions: SessionService;
  /** validates a whole contract; throws INVALID_CONTRACT */
  parseContract(input: unknown): SessionContract;
  networks?: SessionNetworks;
}

/** Applies contract changes to sessions. */
export class ContractUpdates {
  constructor(private readonly deps: ContractUpdatesDeps) {}

  /**
   * Applies a contract patch: `filesystem` must equal the session's lists (they cannot change, see
   * filesystem-rule-changes.ts); `network` replaces the egress lists. Returns the session as it is after.
   */
  async update(sessionId: string, patch: { network?: unknown; filesystem?: unknown }): Promise<SessionRecord> {
    if (patch.network === undefined && patch.filesystem === undefined) {
      throw new AirlockError('INVALID_ARGUMENTS', 'a contract patch needs network (the egress lists) or filesystem (which must stay as it is)');
    }
    if (patch.filesystem !== undefined) {
      const session = await this.deps.sessions.getOwned(sessionId);
      const requested = this.deps.parseContract({ ...session.contract, filesystem: patch.filesystem }).filesystem;
      const changed = changedFilesystemLists(session.contract.filesystem, requested);
      if (changed.length > 0) throw filesystemChangeRefused(sessionId, changed);
      if (patch.network === undefined) return session;
    }
    return this.updateNetwork(sessionId, patch.network);
  }

  /** Replaces the session's network section (allowedDomains / deniedDomains); returns the session at its new version. */
  async updateNetwork(sessionId: string, network: unknown): Promise<SessionRecord> {
    const session = await this.deps.sessions.getOwned(sessionId);
    if (session.state === 'terminated' || session.state === 'failed') {
      throw new AirlockError('INVALID_STATE', `session ${sessionId} is ${session.state}; its contract can no longer change`, { details: { sessionId, state: session.state } });
    }
    const current = session.contract;
    if (current.network === undefined) {
      throw new AirlockError(
        'INVALID_STATE',
        `session ${sessionId} was created without a network section, so its machine has no network interface at all; create a new session whose contract has one`,
        { details: { sessionId } },
      );
    }
    if (network === null || typeof network !== 'object' || Array.isArray(network)) {
      throw new AirlockError('INVALID_ARGUMENTS', 'network must be an object such as {"allowedDomains": ["example.com"]}');
    }
    const next = this.deps.parseContract({ ...current, network });
    const updated = await this.deps.sessions.records.update(
      sessionId,
      (fresh) => ({ contract: next, contractVersion: fresh.contractVersion + 1 }),
      (after, fresh) => ({
        type: 'contract.updated',
        data: { contractVersion: after.contractVersion, previousVersion: fresh.contractVersion, changed: ['network'], network: next.network, previousNetwork: fresh.contract.network, state: after.state },
      }),
    );
    await this.deps.networks?.policyChanged(sessionId);
    return updated;
  }
}
