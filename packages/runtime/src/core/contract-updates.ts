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

/** Collaborators of ContractUpdates. */
export interface ContractUpdatesDeps {
  sessions: SessionService;
  /** validates a whole contract; throws INVALID_CONTRACT */
  parseContract(input: unknown): object;
  networks?: SessionNetworks;
}

/** Applies contract changes to sessions. */
export class ContractUpdates {
  constructor(private readonly deps: ContractUpdatesDeps) {}

  /** Replaces the session's network section (allowedDomains / deniedDomains); returns the session at its new version. */
  updateNetwork(sessionId: string, network: unknown): SessionRecord {
    const session = this.deps.sessions.get(sessionId);
    if (session.state === 'terminated' || session.state === 'failed') {
      throw new AirlockError('INVALID_STATE', `session ${sessionId} is ${session.state}; its contract can no longer change`, { details: { sessionId, state: session.state } });
    }
    const current = session.contract as Record<string, unknown>;
    if (current['network'] === undefined) {
      throw new AirlockError(
        'INVALID_STATE',
        `session ${sessionId} was created without a network section, so its machine has no network interface at all; create a new session whose contract has one`,
        { details: { sessionId } },
      );
    }
    if (network === null || typeof network !== 'object' || Array.isArray(network)) {
      throw new AirlockError('INVALID_ARGUMENTS', 'network must be an object such as {"allowedDomains": ["example.com"]}');
    }
    const next = this.deps.parseContract({ ...current, network }) as Record<string, unknown>;
    const updated = this.deps.sessions.commit(session, { contract: next, contractVersion: session.contractVersion + 1 }, 'contract.updated', {
      contractVersion: session.contractVersion + 1,
      previousVersion: session.contractVersion,
      changed: ['network'],
      network: next['network'],
      previousNetwork: current['network'],
    });
    this.deps.networks?.policyChanged(sessionId);
    return updated;
  }
}
