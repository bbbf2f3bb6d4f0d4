/**
 * The contract's domain lists applied to one destination. Patterns are
 * `example.com` (that name only), `*.example.com` (any name below it, not the
 * name itself), each optionally `:port`. Without a port an allowed pattern
 * covers 80 and 443 only, and a denied pattern covers every port: a list
 * meant to let a little through should not open every port of a host.
 */
import { isIP } from 'node:net';
import type { ContractCredential, ContractNetwork } from '../core/session-contract.js';

/** Ports an allowed pattern without `:port` covers. */
export const DEFAULT_ALLOWED_PORTS: readonly number[] = [80, 443];

/** One parsed pattern. */
export interface DomainPattern {
  text: string;
  /** `*.` patterns match names below `name` */
  wildcard: boolean;
  name: string;
  port?: number;
}

/** What the lists say about one destination. */
export interface DestinationDecision {
  allowed: boolean;
  /** a sentence the agent can read */
  reason: string;
  /** the pattern that decided, if any */
  pattern?: string;
  /** the allowing pattern names an IP address: the operator allowed that address explicitly */
  explicitAddress: boolean;
}

/** Parses a pattern as the contract schema validated it (lower case, optional wildcard and port). */
export function parseDomainPattern(text: string): DomainPattern {
  const lower = text.toLowerCase();
  const portMatch = /:(\d{1,5})$/.exec(lower);
  const withoutPort = portMatch ? lower.slice(0, portMatch.index) : lower;
  const wildcard = withoutPort.startsWith('*.');
  return { text: lower, wildcard, name: wildcard ? withoutPort.slice(2) : withoutPort, ...(portMatch ? { port: Number(portMatch[1]) } : {}) };
}

/** Lower case, without a trailing dot or IPv6 brackets. */
export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
}

/** True when the pattern covers host:port; `defaultPorts` applies to patterns without a port (undefined: any port). */
export function patternMatches(pattern: DomainPattern, host: string, port: number, defaultPorts?: readonly number[]): boolean {
  const name = normalizeHost(host);
  const nameOk = pattern.wildcard ? name.endsWith(`.${pattern.name}`) : name === pattern.name;
  if (!nameOk) return false;
  if (pattern.port !== undefined) return pattern.port === port;
  return defaultPorts === undefined || defaultPorts.includes(port);
}

/** Applies deniedDomains (first) and allowedDomains to host:port; nothing listed means denied. */
export function decideDestination(network: ContractNetwork, host: string, port: number): DestinationDecision {
  const name = normalizeHost(host);
  const target = `${name}:${port}`;
  for (const text of network.deniedDomains ?? []) {
    if (patternMatches(parseDomainPattern(text), name, port)) {
      return { allowed: false, reason: `${target} matches deniedDomains entry "${text}"`, pattern: text, explicitAddress: false };
    }
  }
  for (const text of network.allowedDomains ?? []) {
    const pattern = parseDomainPattern(text);
    if (patternMatches(pattern, name, port, DEFAULT_ALLOWED_PORTS)) {
      return { allowed: true, reason: `${target} matches allowedDomains entry "${text}"`, pattern: text, explicitAddress: isIP(pattern.name) !== 0 };
    }
  }
  const listed = (network.allowedDomains ?? []).slice(0, 10).join(', ') || 'none';
  return { allowed: false, reason: `${target} is not in this session's allowedDomains (${listed}); patterns without :port cover ports 80 and 443`, explicitAddress: false };
}

/** The credential bound to host:port, if any (first match wins). */
export function credentialFor(credentials: readonly ContractCredential[] | undefined, host: string, port: number): ContractCredential | undefined {
  return (credentials ?? []).find((credential) => credential.hosts.some((text) => patternMatches(parseDomainPattern(text), host, port, [443])));
}

/** The placeholder the sandbox sees instead of a secret. */
export function placeholderFor(secret: string): string {
  return `airlock-placeholder-${secret}`;
}
