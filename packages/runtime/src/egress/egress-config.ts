/**
 * Operator configuration of the egress gateway, read from the JSON file
 * named by AIRLOCK_EGRESS_CONFIG (or passed to startServer). Everything is
 * optional. `hosts` maps names to addresses for the gateway's own lookups;
 * it exists for tests, which may only reach namespaces they create, and such
 * addresses skip the private-range check (the operator named them).
 */
import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { z } from 'zod';
import { AirlockError } from '../core/errors.js';

/** The egress configuration. */
export interface EgressConfig {
  /** IPv4 subnet for gateway and sandbox addresses; default 10.200.0.0/16 */
  subnet?: string;
  /** name → IPv4 address, used instead of DNS (tests) */
  hosts?: Record<string, string>;
  /** PEM files of extra CAs trusted for upstream TLS (tests) */
  upstreamCaFiles?: string[];
  /** how long a connection waits for a human when Cedar asks; default 60000 */
  approvalTimeoutMs?: number;
}

const schema = z.strictObject({
  subnet: z.string().regex(/^\d+\.\d+\.\d+\.\d+\/\d+$/).optional(),
  hosts: z.record(z.string().min(1), z.string().refine(isIPv4, 'expected an IPv4 address')).optional(),
  upstreamCaFiles: z.array(z.string().min(1)).optional(),
  approvalTimeoutMs: z.number().int().min(100).max(3_600_000).optional(),
});

/** Reads the configuration file, if one is named; {} otherwise. */
export function loadEgressConfig(path: string | undefined = process.env['AIRLOCK_EGRESS_CONFIG']): EgressConfig {
  if (!path) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AirlockError('INVALID_ARGUMENTS', `cannot read the egress config ${path}: ${(error as Error).message}`, { cause: error });
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw new AirlockError('INVALID_ARGUMENTS', `invalid egress config ${path}: ${result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`);
  const config = result.data;
  return {
    ...(config.subnet ? { subnet: config.subnet } : {}),
    ...(config.hosts ? { hosts: Object.fromEntries(Object.entries(config.hosts).map(([name, address]) => [name.toLowerCase(), address])) } : {}),
    ...(config.upstreamCaFiles ? { upstreamCaFiles: config.upstreamCaFiles } : {}),
    ...(config.approvalTimeoutMs ? { approvalTimeoutMs: config.approvalTimeoutMs } : {}),
  };
}

/** The extra upstream CAs as PEM text. */
export function readUpstreamCas(config: EgressConfig): string[] {
  return (config.upstreamCaFiles ?? []).map((file) => readFileSync(file, 'utf8'));
}
