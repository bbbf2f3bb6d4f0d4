/** API tokens and tenant settings of a server (admin only): make, list, revoke tokens; set a tenant's quotas. */
import type { Connection } from './connection.js';

/** What a token may do. */
export type TokenRole = 'admin' | 'operator' | 'approver' | 'agent' | 'metrics';

/** A token as lists show it: never its secret. */
export interface TokenInfo {
  id: string;
  tenant: string;
  role: TokenRole;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revoked: boolean;
  revokedAt: string | null;
}

/** A token just made: `token` is its secret, shown this once. */
export interface CreatedToken {
  id: string;
  token: string;
  tenant: string;
  role: TokenRole;
  name: string;
  createdAt: string;
}

/** A tenant's limits; null is no limit. */
export interface TenantQuotas {
  maxSessions: number | null;
  maxConcurrentCalls: number | null;
  maxForkBranches: number | null;
  maxForkDepth: number | null;
}

/** A tenant's settings. */
export interface TenantInfo {
  name: string;
  quotas: TenantQuotas;
  /** the images its sessions may use; null: every image */
  images: string[] | null;
  updatedAt: string | null;
}

/** The tokens of a server. */
export class Tokens {
  constructor(private readonly connection: Connection) {}

  /** Makes a token of a tenant (role default: operator); `e2b`: in the form of an E2B API key (`e2b_` + hex). */
  async create(options: { tenant: string; role?: TokenRole; name?: string; e2b?: boolean }): Promise<CreatedToken> {
    return (await this.connection.json<CreatedToken>('POST', '/v1/tokens', options)).body;
  }

  /** Every token, revoked ones included, without secrets. */
  async list(): Promise<TokenInfo[]> {
    return (await this.connection.json<{ tokens: TokenInfo[] }>('GET', '/v1/tokens')).body.tokens;
  }

  /** Revokes a token: it answers 401 from now on. */
  async revoke(id: string): Promise<TokenInfo> {
    return (await this.connection.json<TokenInfo>('DELETE', `/v1/tokens/${encodeURIComponent(id)}`)).body;
  }
}

/** The tenant settings of a server. */
export class Tenants {
  constructor(private readonly connection: Connection) {}

  /** Changes some of a tenant's quotas (null removes a limit) or the images given to it (null: every image); the others stay. */
  async set(name: string, changes: Partial<TenantQuotas> & { images?: string[] | null }): Promise<TenantInfo> {
    return (await this.connection.json<TenantInfo>('PUT', `/v1/tenants/${encodeURIComponent(name)}`, changes)).body;
  }

  /** One tenant's settings (a tenant nobody configured has no limits). */
  async get(name: string): Promise<TenantInfo> {
    return (await this.connection.json<TenantInfo>('GET', `/v1/tenants/${encodeURIComponent(name)}`)).body;
  }

  /** Tenants with settings. */
  async list(): Promise<TenantInfo[]> {
    return (await this.connection.json<{ tenants: TenantInfo[] }>('GET', '/v1/tenants')).body.tenants;
  }
}
