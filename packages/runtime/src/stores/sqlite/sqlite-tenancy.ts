/** Tokens and tenants in the SQLite store: reads over any connection, writes inside a transaction. */
import type Database from 'better-sqlite3';
import type { ApiTokenRecord, TenantRecord } from '../../core/tenancy.js';

/** The tables of tokens and tenants (migration v3). */
export const TENANCY_MIGRATION = `
  CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
  );
  CREATE TABLE tenants (
    name TEXT PRIMARY KEY,
    record TEXT NOT NULL
  );
  `;

type Prepare = (sql: string) => Database.Statement;

/** Token and tenant reads over one connection's statement cache. */
export class SqliteTenancyReads {
  constructor(private readonly statement: Prepare) {}

  async getToken(id: string): Promise<ApiTokenRecord | undefined> {
    const row = this.statement('SELECT record FROM api_tokens WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as ApiTokenRecord) : undefined;
  }

  async findTokenBySecretHash(secretHash: string): Promise<ApiTokenRecord | undefined> {
    const row = this.statement('SELECT record FROM api_tokens WHERE secret_hash = ?').get(secretHash) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as ApiTokenRecord) : undefined;
  }

  async listTokens(): Promise<ApiTokenRecord[]> {
    const rows = this.statement('SELECT record FROM api_tokens ORDER BY created_at, id').all() as { record: string }[];
    return rows.map((row) => JSON.parse(row.record) as ApiTokenRecord);
  }

  async getTenant(name: string): Promise<TenantRecord | undefined> {
    const row = this.statement('SELECT record FROM tenants WHERE name = ?').get(name) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as TenantRecord) : undefined;
  }

  async listTenants(): Promise<TenantRecord[]> {
    const rows = this.statement('SELECT record FROM tenants ORDER BY name').all() as { record: string }[];
    return rows.map((row) => JSON.parse(row.record) as TenantRecord);
  }
}

/** Token and tenant writes; `run` refuses once the transaction ended. */
export class SqliteTenancyWrites {
  constructor(private readonly run: (sql: string, ...params: unknown[]) => Database.RunResult) {}

  async insertToken(token: ApiTokenRecord): Promise<void> {
    this.run(
      'INSERT INTO api_tokens (id, secret_hash, tenant, created_at, record) VALUES (?, ?, ?, ?, ?)',
      token.id,
      token.secretHash,
      token.tenant,
      token.createdAt,
      JSON.stringify(token),
    );
  }

  async updateToken(token: ApiTokenRecord): Promise<boolean> {
    return this.run('UPDATE api_tokens SET record = ? WHERE id = ?', JSON.stringify(token), token.id).changes === 1;
  }

  async putTenant(tenant: TenantRecord): Promise<void> {
    this.run('INSERT INTO tenants (name, record) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET record = excluded.record', tenant.name, JSON.stringify(tenant));
  }
}
