/**
 * Builds the egress side of a server: the secret store, the gateway with
 * its policy, Cedar and audit hooks, and the SessionNetworks the session
 * service uses. Called by the composition root (server.ts), which keeps
 * the one place where adapters meet the core.
 */
import { join } from 'node:path';
import type { ApprovalService } from '../core/approval-service.js';
import { ConnectionApprovals } from '../core/connection-approvals.js';
import type { Store } from '../core/store.js';
import { ContractAuthorizer } from '../policy/contract-authorizer.js';
import { invalidContract } from '../policy/contract-issues.js';
import type { ContractCredential, ContractNetwork, SessionContract } from '../policy/session-contract.js';
import { SecretStore } from '../secrets/secret-store.js';
import type { SessionEgressPolicy } from './connection-admission.js';
import { loadEgressConfig, readUpstreamCas, type EgressConfig } from './egress-config.js';
import { EgressGateway } from './egress-gateway.js';
import { SessionEgress } from './session-egress.js';

/** The egress parts of a running server. */
export interface EgressWiring {
  secrets: SecretStore;
  gateway: EgressGateway;
  networks: SessionEgress;
  /** Rejects a contract whose credentials name secrets that do not exist (INVALID_CONTRACT). */
  checkCredentials<T extends SessionContract>(contract: T): T;
}

/** Wires the egress gateway of a data dir. */
export function wireEgress(options: { root: string; store: Store; approvals: () => ApprovalService; config?: EgressConfig }): EgressWiring {
  const config = options.config ?? loadEgressConfig();
  const { store } = options;
  const secrets = new SecretStore({ dir: join(options.root, 'secrets'), keyFile: process.env['AIRLOCK_SECRETS_KEY_FILE'] ?? join(options.root, 'secrets.key') });
  const authorizer = new ContractAuthorizer();
  let connectionApprovals: ConnectionApprovals | undefined;
  const gateway = new EgressGateway({
    policyOf: (sessionId): SessionEgressPolicy | undefined => {
      const session = store.getSession(sessionId);
      if (!session || session.state === 'terminated' || session.state === 'failed') return undefined;
      const contract = session.contract as { network?: ContractNetwork; credentials?: readonly ContractCredential[] };
      return contract.network ? { network: contract.network, credentials: contract.credentials ?? [], contractVersion: session.contractVersion } : undefined;
    },
    authorize: async (sessionId, host, port) => {
      const session = store.getSession(sessionId);
      if (!session) return { allowed: false, reason: 'the session no longer exists', policyIds: [] };
      const decision = authorizer.authorizeConnection(session, host, port);
      if (!decision.enforced || decision.decision === 'allow') return { allowed: true, reason: decision.reason, policyIds: decision.policyIds };
      if (decision.decision === 'deny') return { allowed: false, reason: decision.reason, policyIds: decision.policyIds };
      connectionApprovals ??= new ConnectionApprovals(options.approvals(), config.approvalTimeoutMs);
      const answer = await connectionApprovals.resolve(sessionId, host, port, decision);
      return { ...answer, policyIds: decision.policyIds };
    },
    audit: (sessionId, type, data) => {
      store.appendAudit({ sessionId, type, data });
    },
    secretValue: (name) => {
      try {
        return secrets.get(name);
      } catch {
        return undefined;
      }
    },
    ...(config.hosts ? { hosts: config.hosts } : {}),
    upstreamCa: readUpstreamCas(config),
  });
  const networks = new SessionEgress({ root: join(options.root, 'egress'), gateway, ...(config.subnet ? { subnet: config.subnet } : {}) });
  return {
    secrets,
    gateway,
    networks,
    checkCredentials: (contract) => {
      const missing = (contract.credentials ?? []).flatMap((credential, index) =>
        secrets.has(credential.secret) ? [] : [{ path: `credentials[${index}].secret`, message: `no secret named ${credential.secret}; store it first with \`airlock secrets set ${credential.secret}\`` }],
      );
      if (missing.length > 0) throw invalidContract(missing);
      return contract;
    },
  };
}
