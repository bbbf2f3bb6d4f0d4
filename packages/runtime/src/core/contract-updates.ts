/**
 * Changing a running session's contract: today its `network` section only
 * (the egress lists), e.g. to tighten what the agent may reach. The change
 * is a new contract version, audited as `contract.updated` with the lists
 * before and after, and applied to the gateway at once: connections the new
 * lists refuse are cut. Credentials, tools and policies stay as created.
 */
import { AirlockError } from './errors.js';
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
