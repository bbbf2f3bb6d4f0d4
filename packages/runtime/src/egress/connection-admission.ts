/**
 * Whether one connection of a sandbox may happen, and to which address:
 * the contract's domain lists, then Cedar (`net.connect`, which may wait for
 * a human), then name resolution and the restricted-address check. Every
 * refusal is audited as `network.denied` with a reason the agent can read.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { ContractCredential, ContractNetwork } from '../core/session-contract.js';
import { credentialFor, decideDestination, normalizeHost } from './destination-policy.js';
import { isLoopbackAddress, isRestrictedAddress } from './restricted-addresses.js';

/** The rules the gateway applies to one session, as of its current contract version. */
export interface SessionEgressPolicy {
  network: ContractNetwork;
  credentials: readonly ContractCredential[];
  contractVersion: number;
}

/** What the gateway needs from the control plane. */
export interface EgressGatewayDeps {
  /** the session's rules; undefined when it may not connect at all (terminated, unknown) */
  policyOf(sessionId: string): Promise<SessionEgressPolicy | undefined>;
  /** Cedar's `net.connect` decision, after any approval wait */
  authorize(sessionId: string, host: string, port: number): Promise<{ allowed: boolean; reason: string; policyIds: string[] }>;
  /** appends to the session's audit chain, in the order of the calls (a failure is reported, never thrown) */
  audit(sessionId: string, type: string, data: Record<string, unknown>): void;
  /** a secret's value, or undefined when it was deleted */
  secretValue(name: string): string | undefined;
  /** test-only name → address table (operator config); such addresses skip the restricted-address check */
  hosts?: Readonly<Record<string, string>>;
  /** extra CA certificates (PEM) trusted for upstream TLS, besides the system ones */
  upstreamCa?: readonly string[];
}

/** How a connection entered the gateway. */
export type EgressVia = 'http-proxy' | 'connect' | 'transparent-http' | 'transparent-tls';

/** The outcome of admission. */
export type Admission =
  | { ok: true; host: string; port: number; address: string; credential: ContractCredential | undefined; contractVersion: number }
  | { ok: false; host: string; port: number; status: number; message: string };

/** Decides, resolves and audits refusals. */
export async function admitConnection(deps: EgressGatewayDeps, sessionId: string, rawHost: string, port: number, via: EgressVia): Promise<Admission> {
  const host = normalizeHost(rawHost);
  const refuse = (status: number, reason: string, extra: Record<string, unknown> = {}): Admission => {
    deps.audit(sessionId, 'network.denied', { host, port, via, reason, ...extra });
    return { ok: false, host, port, status, message: `airlock egress gateway: connection to ${host}:${port} denied: ${reason}` };
  };
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return refuse(400, `invalid destination "${rawHost}:${port}"`);
  // The policy lives in the store: while it does not answer, connections are refused (fail closed), never left to reject.
  const undecided = (error: unknown) => refuse(503, `the policy could not be read (${error instanceof Error ? error.message : String(error)})`);
  let policy: SessionEgressPolicy | undefined;
  try {
    policy = await deps.policyOf(sessionId);
  } catch (error) {
    return undecided(error);
  }
  if (!policy) return refuse(403, 'the session has no network policy (it is not running or was terminated)');
  const listed = decideDestination(policy.network, host, port);
  if (!listed.allowed) return refuse(403, listed.reason, { rule: 'contract.network', contractVersion: policy.contractVersion });
  let cedar: Awaited<ReturnType<EgressGatewayDeps['authorize']>>;
  try {
    cedar = await deps.authorize(sessionId, host, port);
  } catch (error) {
    return undecided(error);
  }
  if (!cedar.allowed) return refuse(403, cedar.reason, { rule: 'cedar', policyIds: cedar.policyIds, contractVersion: policy.contractVersion });
  const table = deps.hosts?.[host];
  let address: string;
  if (table !== undefined) {
    address = table;
  } else {
    try {
      address = isIP(host) ? host : (await lookup(host, { verbatim: true })).address;
    } catch (error) {
      return refuse(502, `the name does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`);
    }
    if (isLoopbackAddress(address)) return refuse(403, `it resolves to the host's own address ${address}, which sandboxes may never reach`, { address });
    if (isRestrictedAddress(address) && !listed.explicitAddress) {
      return refuse(403, `it resolves to the private or reserved address ${address}; list the address itself in allowedDomains to allow it`, { address });
    }
  }
  return { ok: true, host, port, address, credential: credentialFor(policy.credentials, host, port), contractVersion: policy.contractVersion };
}
