/**
 * Tenants, roles and API tokens as the control plane stores them (issue 12,
 * item 7). A token is kept as the SHA-256 of its secret, never the secret:
 * the secret is 256 random bits, so a fast hash is enough (no password
 * stretching) and a copy of the database lets nobody call the API.
 */

/** What a token may do; the matrix is in docs/security.md ("Roles"). */
export type Role = 'admin' | 'operator' | 'approver' | 'agent' | 'metrics';

/** Every role, most powerful first. */
export const ROLES: readonly Role[] = ['admin', 'operator', 'approver', 'agent', 'metrics'];

/** Tenant names: the vocabulary of a contract's `identity.tenant`. */
export const TENANT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

/** The tenant of a contract that names none. */
export const DEFAULT_TENANT = 'default';

/** The tenant of a token that reaches every tenant (the installation's admin token). */
export const EVERY_TENANT = '*';

/** An API token as stored. */
export interface ApiTokenRecord {
  /** `tok_…`: shown in lists and audit records, never a credential */
  id: string;
  tenant: string;
  role: Role;
  /** a person-readable label, recorded as the approver of its decisions */
  name: string;
  /** hex SHA-256 of the secret */
  secretHash: string;
  createdAt: string;
  /** updated at most once a minute per server (a write per request would cost more than it tells) */
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** Limits of one tenant; null means no limit. */
export interface TenantQuotas {
  /** sessions not yet terminated (forks included) */
  maxSessions: number | null;
  /** tool calls in flight at once on one server */
  maxConcurrentCalls: number | null;
  /** branches of one fork */
  maxForkBranches: number | null;
  /** generations of forks below a session made without a fork (its depth is 0) */
  maxForkDepth: number | null;
}

/** A tenant's settings as stored (a tenant without a record has no limits and every image). */
export interface TenantRecord {
  name: string;
  quotas: TenantQuotas;
  /** the images its sessions may use; null (or absent, in records before it existed): every image */
  images?: string[] | null;
  updatedAt: string;
}

/** True when a tenant of these settings may use the image. */
export function imageGiven(tenant: Pick<TenantRecord, 'images'> | undefined, image: string): boolean {
  const images = tenant?.images;
  return images === undefined || images === null || images.includes(image);
}

/** The quotas of a tenant nobody configured. */
export const UNLIMITED: TenantQuotas = { maxSessions: null, maxConcurrentCalls: null, maxForkBranches: null, maxForkDepth: null };
