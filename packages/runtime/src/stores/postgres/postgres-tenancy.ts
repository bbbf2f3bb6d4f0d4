/** Tokens and tenants in the PostgreSQL store: reads over the pool or a transaction's client, writes inside a transaction. */
import type { ApiTokenRecord, TenantRecord } from '../../core/tenancy.js';
import type { Queryable } from './postgres-reads.js';

/** The tables of tokens and tenants (migration v2). */
export const POSTGRES_TENANCY_MIGRATION = `
  CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record JSON NOT NULL
  );
  CREATE TABLE tenants (
    name TEXT PRIMARY KEY,
    record JSON NOT NULL
  );
  `;

/** Token and tenant reads over one queryable. */
export class PostgresTenancyReads {
  constructor(private readonly db: Queryable) {}

  async getToken(id: string): Promise<ApiTokenRecord | undefined> {
    const { rows } = await this.db.query<{ record: ApiTokenRecord }>('SELECT record FROM api_tokens WHERE id = $1', [id]);
    return rows[0]?.record;
  }

  async findTokenBySecretHash(secretHash: string): Promise<ApiTokenRecord | undefined> {
    const { rows } = await this.db.query<{ record: ApiTokenRecord }>('SELECT record FROM api_tokens WHERE secret_hash = $1', [secretHash]);
    return rows[0]?.record;
  }

  async listTokens(): Promise<ApiTokenRecord[]> {
    const { rows } = await this.db.query<{ record: ApiTokenRecord }>('SELECT record FROM api_tokens ORDER BY created_at, id');
    return rows.map((row) => row.record);
  }

  async getTenant(name: string): Promise<TenantRecord | undefined> {
    const { rows } = await this.db.query<{ record: TenantRecord }>('SELECT record FROM tenants WHERE name = $1', [name]);
    return rows[0]?.record;
  }

  async listTenants(): Promise<TenantRecord[]> {
    const { rows } = await this.db.query<{ record: TenantRecord }>('SELECT record FROM tenants ORDER BY name');
    return rows.map((row) => row.record);
  }

  async insertToken(token: ApiTokenRecord): Promise<void> {
    await this.db.query('INSERT INTO api_tokens (id, secret_hash, tenant, created_at, record) VALUES ($1, $2, $3, $4, $5::json)', [
      token.id,
      token.secretHash,
      token.tenant,
      token.createdAt,
      JSON.stringify(token),
    ]);
  }

  async updateToken(token: ApiTokenRecord): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE api_tokens SET record = $1::json WHERE id = $2', [JSON.stringify(token), token.id]);
    return rowCount === 1;
  }

  async putTenant(tenant: TenantRecord): Promise<void> {
    await this.db.query('INSERT INTO tenants (name, record) VALUES ($1, $2::json) ON CONFLICT (name) DO UPDATE SET record = excluded.record', [
      tenant.name,
      JSON.stringify(tenant),
    ]);
  }
}
